"""Run by tests/serving/test_export.py in a fresh process: an export served as TF Serving would.

Usage: `python serve_check.py EXPORT_VERSION_DIR SENTENCES_JSON`.

Imports only TensorFlow and tensorflow-text (never keras_attention), and prints one JSON line:

- `unregistered_without_tf_text` / `unregistered_with_tf_text`: the ops of the SavedModel's graph
  and function library that TensorFlow does not know, before and after importing tensorflow-text;
- `tf_serving_default`: the signature's output (or the error) with XLA compilation disabled, as
  `tensorflow_model_server` runs by default (`main.cc` calls `tensorflow::DisableXlaCompilation()`
  unless `--xla_cpu_compilation_enabled=true`);
- `xla_enabled`: the output with XLA compilation enabled again (as plain Python TensorFlow runs);
- `keras_attention_loaded`: whether anything imported `keras_attention`.

The test module imports `saved_model_ops` from here for its in-process op audit.
"""

import ctypes
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.python.framework import op_def_registry

SIGNATURE_KEY = "serving_default"
XLA_MUST_COMPILE = "_XlaMustCompile"


def saved_model_ops(path: str | os.PathLike) -> tuple[set[str], list[str]]:
    """The op types in `path/saved_model.pb` (graph and function library), and every
    function or node whose `_XlaMustCompile` attribute is true."""
    saved_model = saved_model_pb2.SavedModel()
    saved_model.ParseFromString((Path(path) / "saved_model.pb").read_bytes())
    ops, must_compile = set(), []
    for meta_graph in saved_model.meta_graphs:
        graph = meta_graph.graph_def
        nodes = [(node, "graph") for node in graph.node]
        for function in graph.library.function:
            if function.attr[XLA_MUST_COMPILE].b:
                must_compile.append(function.signature.name)
            nodes += [(node, function.signature.name) for node in function.node_def]
        for node, owner in nodes:
            ops.add(node.op)
            if node.attr[XLA_MUST_COMPILE].b:
                must_compile.append(f"{owner}/{node.name}")
    return ops, must_compile


def _unregistered(ops: set[str]) -> list[str]:
    return sorted(op for op in ops if op_def_registry.get(op) is None)


def _set_xla_compilation(enabled: bool) -> None:
    """What `tensorflow_model_server` does at start: `tensorflow::DisableXlaCompilation()`."""
    library = ctypes.CDLL(str(Path(tf.__file__).parent / "libtensorflow_cc.so.2"))
    if enabled:
        library._ZN10tensorflow20EnableXlaCompilationEv()
    else:
        library._ZN10tensorflow21DisableXlaCompilationEv()


def _translate(signature, sentences: list[str]) -> dict:
    try:
        outputs = signature(sentences=tf.constant(sentences, tf.string))
    except tf.errors.OpError as error:
        return {"error": f"{type(error).__name__}: {error.message}"}
    return {
        "translations": [t.decode("utf-8") for t in outputs["translations"].numpy()],
        "scores": outputs["scores"].numpy().tolist(),
    }


def main(path: str, sentences: list[str]) -> dict:
    ops, _ = saved_model_ops(path)
    report = {"unregistered_without_tf_text": _unregistered(ops)}
    import tensorflow_text  # noqa: F401 (registers the SentencePiece ops)

    report["unregistered_with_tf_text"] = _unregistered(ops)
    _set_xla_compilation(False)
    signature = tf.saved_model.load(path).signatures[SIGNATURE_KEY]
    report["tf_serving_default"] = _translate(signature, sentences)
    _set_xla_compilation(True)
    report["xla_enabled"] = _translate(signature, sentences)
    report["keras_attention_loaded"] = "keras_attention" in sys.modules
    return report


if __name__ == "__main__":
    result = main(sys.argv[1], json.loads(sys.argv[2]))
    assert "keras_attention" not in sys.modules, "serving must not need keras_attention"
    print(json.dumps(result))
