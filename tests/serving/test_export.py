"""The SavedModel export (issue 4), checked the way TensorFlow Serving runs it.

No `tensorflow_model_server` can be installed here, so the export is checked with the tools
that share its loader and its op registry: `saved_model_cli show` / `run`, a fresh process that
imports only TensorFlow and tensorflow-text (`tests/scripts/serve_check.py`, which also disables
XLA compilation as the model server does by default), an audit of every op in the graph and its
function library, and TF Serving's REST and gRPC request / response bodies built by hand and fed
through the loaded signature. TensorFlow only (the export is a TensorFlow SavedModel).
"""

import ast
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import keras
import numpy as np
import pytest
import sentencepiece
import tensorflow as tf
from tensorflow.core.protobuf import config_pb2
from tensorflow.python.framework import op_def_registry

from keras_attention.core.special_tokens import BOS_ID, EOS_ID, PAD_ID
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.decoding import beam_search, greedy_search
from keras_attention.models import Transformer, copy_with_dtype
from keras_attention.serving.export import (
    SIGNATURE_KEY,
    STAGING_LOCK,
    UNLOCKED_STAGING_MAX_AGE_S,
    export_translator,
    load_exported,
    remove_stale_staging,
)
from keras_attention.serving.translator import Translator
from keras_attention.serving.warmup_requests import (
    DEFAULT_WARMUP_SENTENCES,
    WARMUP_FILE,
    read_warmup_requests,
    warmup_batches,
)
from tests.conftest import to_numpy
from tests.scripts.serve_check import saved_model_ops
from tests.serving.conftest import (
    ALPHA,
    BEAM_SIZE,
    EXTRA,
    LONG,
    MAX_SOURCE,
    NOT_VECTORS,
    make_translator,
    rank_error_pattern,
    translation_texts,
)
from tests.tolerances import assert_close

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="the export is a TensorFlow SavedModel"
)

SCRIPT = Path(__file__).parents[1] / "scripts" / "serve_check.py"
SAVED_MODEL_CLI = str(Path(sys.executable).parent / "saved_model_cli")
# `saved_model_cli` started from Python after importing tensorflow_text, which registers the
# SentencePiece ops (TF Serving links them); the plain console script does not know them.
CLI_WITH_TF_TEXT = [
    sys.executable,
    "-c",
    "import sys, tensorflow_text; from tensorflow.python.tools import saved_model_cli; "
    "sys.argv[0] = 'saved_model_cli'; saved_model_cli.main()",
]
TF_TEXT_OPS = {"SentencepieceOp", "SentencepieceTokenizeOp", "SentencepieceDetokenizeOp"}
PYTHON_OPS = {"PyFunc", "PyFuncStateless", "EagerPyFunc"}
BYTES_LITERAL = r"b'(?:[^'\\]|\\.)*'|b\"(?:[^\"\\]|\\.)*\""
FLOAT = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
MARKER = "old_version_marker"
# Every signature of an export, with its inputs; the outputs of those that do not return
# `translations` and `scores`.
SIGNATURES = {
    SIGNATURE_KEY: ["sentences"],
    "greedy": ["sentences"],
    "n_best": ["sentences"],
    "sample": ["sentences", "seed", "temperature", "top_k", "top_p"],
    "score": ["sentences", "targets"],
}
SIGNATURE_OUTPUTS = {"score": ["lengths", "log_probs", "per_token", "scores"]}

# Bad requests: the batch, and for each sentence whether it is blank (translates to "").
BAD_REQUESTS = {
    "empty_string": ([""], [True]),
    "whitespace": ([" \t\n  "], [True]),
    "unicode_whitespace": (["\u00a0\u3000"], [True]),
    "10000_characters": ([LONG], [False]),
    "invalid_utf8": ([b"\xff\xfe\x80"], [False]),
    "empty_batch": ([], []),
    "mixed": (
        ["", b"the \xc3\x28dog", LONG, "  ", "The dog sleeps."],
        [True, False, False, True, False],
    ),
    "nul": (["the\x00dog", "\x00"], [False, False]),
}


def _run(
    command: list[str], cwd: Path, without: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    """Runs `command` in a fresh process (TF logs silenced, the variables `without` unset);
    never raises on failure."""
    env = {name: value for name, value in os.environ.items() if name not in without}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    return subprocess.run(
        command, capture_output=True, text=True, timeout=300, check=False, cwd=cwd, env=env
    )


def _cli_run(launcher: list[str], path: Path, sentences: list[str]) -> subprocess.CompletedProcess:
    """`saved_model_cli run` of the `serving_default` signature on `sentences`."""
    arguments = ["run", "--dir", str(path), "--tag_set", "serve"]
    arguments += ["--signature_def", SIGNATURE_KEY]
    arguments += ["--input_exprs", f"sentences={json.dumps(sentences)}"]
    return _run(launcher + arguments, path.parent)


def _cli_results(stdout: str) -> dict[str, str]:
    """The blocks `saved_model_cli run` prints, by output key."""
    parts = re.split(r"Result for output key (\w+):\n", stdout)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _assert_same_translations(texts: list[str], scores, expected: dict) -> None:
    assert texts == expected["translations"]
    np.testing.assert_allclose(
        np.asarray(scores, "float64"), expected["scores"], atol=1e-5, rtol=1e-5
    )


def _rest_batch(body: dict) -> list:
    """The batch for the one input `sentences` that TF Serving's REST API builds from a body.

    Row format: `{"instances": [value, ...]}`, or one `{"sentences": value}` object per instance;
    columnar format: `{"inputs": {"sentences": [...]}}` or `{"inputs": [...]}`.
    """
    if "instances" in body:
        return [row["sentences"] if isinstance(row, dict) else row for row in body["instances"]]
    inputs = body["inputs"]
    return inputs["sentences"] if isinstance(inputs, dict) else inputs


def _rest_response(body: dict, outputs: dict) -> dict:
    """TF Serving's REST response: `predictions`, one object per instance, for the row
    format; `outputs`, one list per output, for the columnar format."""
    columns = {
        "translations": translation_texts(outputs["translations"]),
        "scores": to_numpy(outputs["scores"]).tolist(),
    }
    if "instances" in body:
        rows = zip(*columns.values(), strict=True)
        return {"predictions": [dict(zip(columns, row, strict=True)) for row in rows]}
    return {"outputs": columns}


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, by relative path."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _old_version(exported: Path, export_dir: Path, version: int) -> Path:
    """A copy of an export as `export_dir/version`, with a marker file to recognise it."""
    target = export_dir / str(version)
    shutil.copytree(exported, target)
    (target / MARKER).write_text("old")
    return target


def _reference(
    model, processor: sentencepiece.SentencePieceProcessor, sentences: list[str], beam_size: int
) -> dict:
    """The pipeline outside the graph, one sentence at a time (so no batch padding): the
    Python SentencePiece ids cut to `MAX_SOURCE - 1` plus EOS, the library's search, and the
    ids before the first EOS decoded by Python SentencePiece."""
    texts, scores = [], []
    for sentence in sentences:
        source = np.array([[*processor.encode(sentence)[: MAX_SOURCE - 1], EOS_ID]], "int32")
        if beam_size == 1:
            tokens, score = greedy_search(model, source, extra_length=EXTRA)
        else:
            tokens, score = beam_search(
                model, source, beam_size=beam_size, alpha=ALPHA, extra_length=EXTRA
            )
        tokens = to_numpy(tokens)[0].tolist()
        tokens = tokens[: tokens.index(EOS_ID)] if EOS_ID in tokens else tokens
        texts.append(processor.decode([t for t in tokens if t not in (PAD_ID, BOS_ID)]))
        scores.append(float(to_numpy(score)[0]))
    return {"translations": texts, "scores": np.array(scores)}


@pytest.fixture(scope="module")
def export_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("export")


@pytest.fixture(scope="module")
def exported(translator: Translator, export_root: Path) -> Path:
    """The one export of the module (version chosen by `export_translator`: 1)."""
    return export_translator(translator, export_root)


@pytest.fixture(scope="module")
def served(exported: Path):
    return load_exported(exported)


@pytest.fixture(scope="module")
def greedy_served(model: Transformer, tokenizer: SubwordTokenizer, tmp_path_factory):
    translator = make_translator(model, tokenizer, beam_size=1)
    return load_exported(export_translator(translator, tmp_path_factory.mktemp("greedy")))


@pytest.fixture(scope="module")
def sentences(corpus: dict) -> list[str]:
    return [english for english, _ in corpus["test"][:3]]


@pytest.fixture(scope="module")
def library_output(translator: Translator, sentences: list[str]) -> dict:
    """`Translator.translate` in this process, the output every served path must equal."""
    outputs = translator.translate(tf.constant(sentences))
    return {
        "translations": translation_texts(outputs["translations"]),
        "scores": to_numpy(outputs["scores"]).astype("float64"),
    }


@pytest.fixture(scope="module")
def fresh_process(exported: Path, sentences: list[str]) -> dict:
    # As the model server runs: without XLA auto-clustering (`TF_XLA_FLAGS=--tf_xla_auto_jit=2`
    # in the tests' environment would compile the signature with XLA, which it disables).
    command = [sys.executable, str(SCRIPT), str(exported), json.dumps(sentences)]
    done = _run(command, exported, without=("TF_XLA_FLAGS",))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def cli_show(exported: Path) -> str:
    done = _run([SAVED_MODEL_CLI, "show", "--all", "--dir", str(exported)], exported.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def graph_ops(exported: Path) -> tuple[set[str], list[str]]:
    return saved_model_ops(exported)


# The version folder.


def test_export_writes_version_1_and_nothing_else(export_root: Path, exported: Path):
    assert exported == export_root / "1"
    assert sorted(os.listdir(export_root)) == ["1"]  # no temporary folder left behind
    assert (exported / "saved_model.pb").is_file()
    assert (exported / "variables" / "variables.index").is_file()


def test_default_warmup_sentences(exported: Path):
    requests = read_warmup_requests(exported)
    sentences = [[s.decode() for s in tf.make_ndarray(r.inputs["sentences"])] for r in requests]
    assert sentences == warmup_batches(DEFAULT_WARMUP_SENTENCES) * len(SIGNATURES)
    signatures = [request.model_spec.signature_name for request in requests]
    batches = warmup_batches(DEFAULT_WARMUP_SENTENCES)
    assert signatures == [name for name in SIGNATURES for _ in batches]
    for request in requests:  # every input of its signature, as TF Serving needs
        assert sorted(request.inputs) == sorted(SIGNATURES[request.model_spec.signature_name])
    assert (exported / WARMUP_FILE).is_file()


# saved_model_cli, as Serving reads the signature.


def test_show_lists_every_signature_with_its_inputs_and_outputs(cli_show: str):
    signatures = re.findall(r"signature_def\['(\w+)'\]", cli_show)
    assert sorted(signatures) == sorted(["__saved_model_init_op", *SIGNATURES])
    for name, inputs in SIGNATURES.items():
        serving = cli_show.split(f"signature_def['{name}']")[1].split("signature_def[")[0]
        assert "Method name is: tensorflow/serving/predict" in serving
        found = re.findall(r"(inputs|outputs)\['(\w+)'\]", serving)
        assert sorted(name for kind, name in found if kind == "inputs") == sorted(inputs)
        outputs = SIGNATURE_OUTPUTS.get(name, ["scores", "translations"])
        assert sorted(name for kind, name in found if kind == "outputs") == sorted(outputs)


@pytest.mark.parametrize(
    "kind, name, dtype",
    [
        ("inputs", "sentences", "DT_STRING"),
        ("outputs", "translations", "DT_STRING"),
        ("outputs", "scores", "DT_FLOAT"),
    ],
)
def test_show_gives_each_tensor_a_batch_of_any_size(cli_show: str, kind: str, name: str, dtype):
    for signature in ("greedy", SIGNATURE_KEY):
        serving = cli_show.split(f"signature_def['{signature}']")[1].split("signature_def[")[0]
        pattern = rf"{kind}\['{name}'\] tensor_info:\s+dtype: (\w+)\s+shape: (\S+)"
        found = re.search(pattern, serving)
        assert found is not None, serving
        assert found.groups() == (dtype, "(-1)")


def test_cli_run_translates_like_the_library(
    exported: Path, sentences: list[str], library_output: dict
):
    done = _cli_run(CLI_WITH_TF_TEXT, exported, sentences)
    assert done.returncode == 0, done.stderr[-3000:]
    results = _cli_results(done.stdout)
    assert sorted(results) == ["scores", "translations"]
    texts = [
        ast.literal_eval(t).decode() for t in re.findall(BYTES_LITERAL, results["translations"])
    ]
    scores = [float(s) for s in re.findall(FLOAT, results["scores"])]
    _assert_same_translations(texts, scores, library_output)


def test_cli_run_without_tensorflow_text_lacks_only_its_ops(exported: Path):
    """The plain `saved_model_cli` (TensorFlow alone) cannot load the graph: the SentencePiece
    op is not registered. Together with the fresh-process check (every op is registered once
    tensorflow_text is imported) this shows the graph needs exactly TF + tensorflow-text."""
    done = _cli_run([SAVED_MODEL_CLI], exported, ["The dog sleeps."])
    assert done.returncode != 0
    assert "Op type not registered 'SentencepieceOp'" in done.stderr


# A fresh process with only tensorflow and tensorflow_text.


def test_fresh_process_translates_like_the_library(fresh_process: dict, library_output: dict):
    assert fresh_process["keras_attention_loaded"] is False
    result = fresh_process["xla_enabled"]
    assert "error" not in result, result.get("error")
    _assert_same_translations(result["translations"], result["scores"], library_output)


def test_fresh_process_needs_tf_text_for_exactly_the_sentencepiece_ops(fresh_process: dict):
    assert set(fresh_process["unregistered_without_tf_text"]) == TF_TEXT_OPS
    assert fresh_process["unregistered_with_tf_text"] == []


def test_fresh_process_translates_with_xla_compilation_disabled_as_tf_serving(
    fresh_process: dict, library_output: dict
):
    """`keras.ops.slice_update` lowers to XlaDynamicUpdateSlice on TensorFlow, which the model
    server refuses to run by default ("XLA compilation disabled"); the search and the caches
    must not use it."""
    result = fresh_process["tf_serving_default"]
    assert "error" not in result, result.get("error")
    _assert_same_translations(result["translations"], result["scores"], library_output)


# Op audit of the graph and its function library.


def test_every_op_is_registered_and_none_runs_python(graph_ops: tuple[set[str], list[str]]):
    ops, _ = graph_ops
    assert len(ops) > 20  # the walk found the search's ops, not only the signature wrapper
    assert {"While", "TopKV2", "StringStrip", "UnicodeTranscode"} <= ops
    assert ops >= TF_TEXT_OPS  # the tokenizer and detokenizer really are in the graph
    assert [op for op in sorted(ops) if op_def_registry.get(op) is None] == []
    assert ops.isdisjoint(PYTHON_OPS)


def test_no_function_must_be_xla_compiled(graph_ops: tuple[set[str], list[str]]):
    _, must_compile = graph_ops
    assert must_compile == []


def test_no_op_needs_xla(graph_ops: tuple[set[str], list[str]]):
    """`Xla*` ops (tf2xla) run outside XLA clusters only through XlaCompileOnDemandOp, which
    TF Serving disables by default and cannot run on GPU (tensorflow/serving#2217)."""
    ops, _ = graph_ops
    assert sorted(op for op in ops if op.startswith("Xla")) == []


# The served signature against the library.


def test_served_signature_equals_the_library(served, sentences: list[str], library_output: dict):
    outputs = served(sentences=tf.constant(sentences))
    assert set(outputs) == {"translations", "scores"}
    assert outputs["scores"].dtype == tf.float32
    texts = translation_texts(outputs["translations"])
    _assert_same_translations(texts, outputs["scores"], library_output)


@pytest.mark.parametrize("served_fixture, beam_size", [("served", BEAM_SIZE), ("greedy_served", 1)])
def test_served_signature_equals_the_pipeline_outside_the_graph(
    request, model, processor, served_fixture: str, beam_size: int
):
    """Also shows the 10,000-character input translated as its first MAX_SOURCE - 1 pieces."""
    batch = ["The dog sleeps.", "A tall woman reads a red book in the park today.", LONG]
    outputs = request.getfixturevalue(served_fixture)(sentences=tf.constant(batch))
    expected = _reference(model, processor, batch, beam_size)
    texts = translation_texts(outputs["translations"])
    _assert_same_translations(texts, outputs["scores"], expected)


def test_invalid_bytes_and_surrounding_whitespace_are_cleaned(served):
    raw = [b"\xffthe dog sleeps.", "\t the dog sleeps. \n"]
    clean = ["\ufffdthe dog sleeps.", "the dog sleeps."]
    outputs, expected = served(sentences=tf.constant(raw)), served(sentences=tf.constant(clean))
    assert translation_texts(outputs["translations"]) == translation_texts(expected["translations"])
    np.testing.assert_allclose(to_numpy(outputs["scores"]), to_numpy(expected["scores"]))


@pytest.mark.parametrize("batch, blank", BAD_REQUESTS.values(), ids=BAD_REQUESTS.keys())
def test_bad_requests_get_one_string_per_input(
    served, translator: Translator, batch: list, blank: list[bool]
):
    outputs = served(sentences=tf.constant(batch, tf.string))
    assert outputs["translations"].shape == (len(batch),)
    assert outputs["scores"].shape == (len(batch),)
    texts, scores = translation_texts(outputs["translations"]), to_numpy(outputs["scores"])
    assert [text for text, empty in zip(texts, blank, strict=True) if empty] == [""] * sum(blank)
    assert [score for score, empty in zip(scores, blank, strict=True) if empty] == [0.0] * sum(
        blank
    )
    library = translator.translate(tf.constant(batch, tf.string))
    assert texts == translation_texts(library["translations"])
    np.testing.assert_allclose(scores, to_numpy(library["scores"]), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("batch, rank", NOT_VECTORS.values(), ids=NOT_VECTORS.keys())
def test_served_signature_refuses_what_is_not_a_vector(served, batch, rank: int):
    """The signature declares the shape `[None]`, which a loaded signature does not enforce: a
    matrix gave one translation per element and a scalar one translation, silently."""
    with pytest.raises(tf.errors.InvalidArgumentError, match=rank_error_pattern(rank)):
        served(sentences=tf.constant(batch, tf.string))


@pytest.fixture(scope="module")
def freshly_loaded(exported: Path):
    """The serving signature as `tf.saved_model.load` itself (not `load_exported`) gives it."""
    return tf.saved_model.load(str(exported)).signatures[SIGNATURE_KEY]


@pytest.mark.parametrize("batch, rank", NOT_VECTORS.values(), ids=NOT_VECTORS.keys())
def test_freshly_loaded_signature_refuses_what_is_not_a_vector(freshly_loaded, batch, rank: int):
    """Called with a positional argument; each refusal leaves it serving."""
    signature = freshly_loaded
    with pytest.raises(tf.errors.InvalidArgumentError, match=rank_error_pattern(rank)):
        signature(tf.constant(batch, tf.string))
    assert signature(tf.constant(["the dog", ""]))["translations"].shape == (2,)  # still serves


def test_session_fed_as_tf_serving_refuses_what_is_not_a_vector(exported: Path):
    """TF Serving runs the signature in a `Session` and checks no declared shape; a callable
    made from `CallableOptions` feeds the same way (`Session.run` would check in Python)."""
    with tf.Graph().as_default() as graph, tf.compat.v1.Session(graph=graph) as session:
        meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], str(exported))
        signature = meta_graph.signature_def[SIGNATURE_KEY]
        options = config_pb2.CallableOptions()
        options.feed.append(signature.inputs["sentences"].name)
        options.fetch.append(signature.outputs["translations"].name)
        run = session._make_callable_from_options(options)
        for batch, rank in NOT_VECTORS.values():
            with pytest.raises(tf.errors.InvalidArgumentError, match=rank_error_pattern(rank)):
                run(np.array(batch, object))
        (translations,) = run(np.array(["the dog", ""], object))
        assert translations.shape == (2,) and translations[1] == b""


# TF Serving's REST and gRPC bodies, converted as the server does.


@pytest.mark.parametrize(
    "layout",
    ["instances", "named_instances", "named_inputs", "inputs"],
)
def test_rest_bodies_get_one_prediction_per_instance(
    served, sentences: list[str], library_output: dict, layout: str
):
    body = {
        "instances": {"instances": sentences},
        "named_instances": {"instances": [{"sentences": s} for s in sentences]},
        "named_inputs": {"inputs": {"sentences": sentences}},
        "inputs": {"inputs": sentences},
    }[layout]
    request = json.loads(json.dumps(body))  # what the server receives
    outputs = served(sentences=tf.constant(_rest_batch(request), tf.string))
    response = json.loads(json.dumps(_rest_response(request, outputs)))
    if "instances" in body:
        rows = response["predictions"]
        assert len(rows) == len(sentences)
        assert all(set(row) == {"translations", "scores"} for row in rows)
        columns = {name: [row[name] for row in rows] for name in ("translations", "scores")}
    else:
        columns = response["outputs"]
    _assert_same_translations(columns["translations"], columns["scores"], library_output)


def test_grpc_predict_request_and_response(served, sentences: list[str], library_output: dict):
    from tensorflow_serving.apis import predict_pb2  # an install requirement

    request = predict_pb2.PredictRequest()
    request.model_spec.name = "translator"
    request.model_spec.signature_name = SIGNATURE_KEY
    request.inputs["sentences"].CopyFrom(tf.make_tensor_proto(sentences))
    request = predict_pb2.PredictRequest.FromString(request.SerializeToString())
    inputs = {name: tf.constant(tf.make_ndarray(t)) for name, t in request.inputs.items()}
    outputs = served(**inputs)
    response = predict_pb2.PredictResponse()
    for name, tensor in outputs.items():
        response.outputs[name].CopyFrom(tf.make_tensor_proto(to_numpy(tensor)))
    response = predict_pb2.PredictResponse.FromString(response.SerializeToString())
    assert response.outputs["translations"].dtype == tf.string.as_datatype_enum
    assert response.outputs["scores"].dtype == tf.float32.as_datatype_enum
    translations = tf.make_ndarray(response.outputs["translations"])
    scores = tf.make_ndarray(response.outputs["scores"])
    _assert_same_translations(translation_texts(translations), scores, library_output)


# Atomic, versioned writing.


def test_existing_version_is_never_overwritten_silently(
    translator: Translator, export_root: Path, exported: Path
):
    before = _snapshot(export_root)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        export_translator(translator, export_root, version=1)
    assert _snapshot(export_root) == before


def test_overwrite_replaces_the_version(translator: Translator, exported: Path, tmp_path: Path):
    old = _old_version(exported, tmp_path, 1)
    assert export_translator(translator, tmp_path, version=1, overwrite=True) == old
    assert sorted(os.listdir(tmp_path)) == ["1"]
    assert not (old / MARKER).exists()
    assert (old / "saved_model.pb").is_file()


@pytest.mark.parametrize(
    "options", [{}, {"version": 1, "overwrite": True}], ids=["new_version", "overwrite"]
)
def test_failed_export_leaves_no_trace(
    translator: Translator, exported: Path, tmp_path: Path, monkeypatch, options: dict
):
    def write_half_then_fail(self, filepath, **kwargs):
        os.makedirs(filepath)
        Path(filepath, "saved_model.pb").write_bytes(b"half-written")
        raise OSError("disk full")

    _old_version(exported, tmp_path, 1)
    before = _snapshot(tmp_path)
    # `keras.export.ExportArchive()` builds the backend's subclass: patch that class.
    archive_class = type(keras.export.ExportArchive())
    monkeypatch.setattr(archive_class, "write_out", write_half_then_fail)
    with pytest.raises(OSError, match="disk full"):
        export_translator(translator, tmp_path, **options)
    assert sorted(os.listdir(tmp_path)) == ["1"]  # no version 2, no temporary folder
    assert _snapshot(tmp_path) == before  # the old version is intact


@pytest.mark.parametrize("version", [-1, "x", 1.5, True])
def test_bad_version_is_rejected(translator: Translator, tmp_path: Path, version):
    with pytest.raises(ValueError, match="version"):
        export_translator(translator, tmp_path / "export", version=version)
    assert not (tmp_path / "export").exists()


# Leftovers of killed exports.


def _staging(export_dir: Path, name: str, lock: bool = False, age_s: float = 0.0) -> Path:
    """A staging folder as an export leaves it: a half-written model, a free lock file if
    `lock`, last modified `age_s` seconds ago."""
    staging = export_dir / name
    (staging / "model").mkdir(parents=True)
    (staging / "model" / "saved_model.pb").write_bytes(b"half-written")
    if lock:
        (staging / STAGING_LOCK).touch()
    stamp = time.time() - age_s
    for path in (staging / "model", staging):
        os.utime(path, (stamp, stamp))
    return staging


def test_export_takes_the_next_version_and_removes_staging_folders_of_killed_exports(
    translator: Translator, exported: Path, tmp_path: Path
):
    _old_version(exported, tmp_path, 3)
    (tmp_path / "notes").mkdir()  # not a version
    old = UNLOCKED_STAGING_MAX_AGE_S + 60
    killed = [
        _staging(tmp_path, ".1-abc_1234", lock=True),  # lock freed when its process died
        _staging(tmp_path, ".12-zz99zz99", lock=False, age_s=old),  # older module, long dead
    ]
    running = _staging(tmp_path, ".3-running1", lock=True)
    kept = [
        running,
        _staging(tmp_path, ".4-creating", lock=False),  # no lock file yet: being created
        *(
            _staging(tmp_path, name, lock=True, age_s=old)
            for name in (".5-abc", ".5-abcdefghi", ".x-abcdefgh", "5-abcdefgh", ".5-ABCDEFGH")
        ),
        _staging(tmp_path, ".git", age_s=old),
    ]
    (tmp_path / ".6-abcdefgh").write_text("a file, not a staging folder")
    with open(running / STAGING_LOCK, "r+b") as held:  # the running export holds its lock
        fcntl.flock(held, fcntl.LOCK_EX)
        path = export_translator(translator, tmp_path)
    assert path == tmp_path / "4"  # one more than the highest version
    assert (path / "saved_model.pb").is_file()
    assert not any(staging.exists() for staging in killed)
    assert all((folder / "model" / "saved_model.pb").is_file() for folder in kept)
    expected = sorted(["3", "4", "notes", ".6-abcdefgh", *(folder.name for folder in kept)])
    assert sorted(os.listdir(tmp_path)) == expected


def test_killed_overwrite_gets_its_old_version_back(exported: Path, tmp_path: Path):
    """An overwrite killed between its two renames left version 1 only in its staging folder:
    it is put back, not deleted."""
    staging = _staging(tmp_path, ".1-killed_1", lock=True)
    shutil.copytree(exported, staging / "old")
    (staging / "old" / MARKER).write_text("old")
    _old_version(exported, tmp_path, 2)
    assert remove_stale_staging(tmp_path) == [staging]
    assert sorted(os.listdir(tmp_path)) == ["1", "2"]
    assert (tmp_path / "1" / MARKER).read_text() == "old"
    assert (tmp_path / "1" / "saved_model.pb").read_bytes() == (
        exported / "saved_model.pb"
    ).read_bytes()


def test_finished_export_killed_before_cleaning_up_keeps_the_new_version(
    exported: Path, tmp_path: Path
):
    staging = _staging(tmp_path, ".1-killed_2", lock=True)
    _old_version(exported, staging, 0).rename(staging / "old")  # the replaced version
    new = _old_version(exported, tmp_path, 1)
    (new / MARKER).write_text("new")
    assert remove_stale_staging(tmp_path) == [staging]
    assert sorted(os.listdir(tmp_path)) == ["1"]
    assert (new / MARKER).read_text() == "new"


def test_lock_of_a_killed_export_is_free(tmp_path: Path):
    """A real process makes a staging folder and locks it as `export_translator` does, then
    dies by SIGKILL (no clean-up runs): the next clean-up removes the folder."""
    code = (
        "import os, signal, sys, tempfile; from pathlib import Path; "
        "from keras_attention.serving import export; "
        "staging = Path(tempfile.mkdtemp(dir=sys.argv[1], prefix='.7-')); "
        "lock = export._lock_staging(staging); "
        "print(staging.name, flush=True); os.kill(os.getpid(), signal.SIGKILL)"
    )
    done = _run([sys.executable, "-c", code, str(tmp_path)], Path(__file__).parent.parent)
    assert done.returncode == -9, done.stderr[-3000:]
    (name,) = os.listdir(tmp_path)
    assert name == done.stdout.strip()
    assert sorted(os.listdir(tmp_path / name)) == [STAGING_LOCK]
    assert remove_stale_staging(tmp_path) == [tmp_path / name]
    assert os.listdir(tmp_path) == []


# The signatures beyond the one answer: n-best lists, sampling, forced scores.


def test_the_n_best_sample_and_score_signatures_equal_the_library(
    exported: Path, translator: Translator, sentences: list[str]
):
    loaded = tf.saved_model.load(str(exported)).signatures
    batch = tf.constant(sentences[:4])
    n_best, library = loaded["n_best"](sentences=batch), translator.n_best(batch)
    assert n_best["translations"].shape == (len(sentences[:4]), BEAM_SIZE)
    assert translation_texts(n_best["translations"]) == translation_texts(library["translations"])
    assert_close(n_best["scores"], library["scores"])
    settings = dict(temperature=tf.constant(0.8), top_k=tf.constant(5), top_p=tf.constant(0.9))
    sampled = loaded["sample"](sentences=batch, seed=tf.constant(3, tf.int64), **settings)
    library = translator.sample(batch, seed=3, temperature=0.8, top_k=5, top_p=0.9)
    assert translation_texts(sampled["translations"]) == translation_texts(library["translations"])
    assert_close(sampled["scores"], library["scores"])
    targets = library["translations"]
    scored, library = (
        loaded["score"](sentences=batch, targets=targets),
        translator.score(batch, targets),
    )
    for name in ("scores", "log_probs", "per_token"):
        assert_close(scored[name], library[name])


def test_a_lora_model_exports_merged_and_an_ensemble_as_one_savedmodel(
    model: Transformer, tokenizer: SubwordTokenizer, tmp_path: Path, sentences: list[str]
):
    from keras_attention.decoding import Ensemble
    from keras_attention.models.lora import lora_layers

    adapted = copy_with_dtype(model, "float32")
    adapted.enable_lora(2)
    rng = np.random.default_rng(0)
    for layer in lora_layers(adapted).values():
        layer.lora_kernel_b.assign(rng.normal(0, 0.5, layer.lora_kernel_b.shape))
    translator = make_translator(adapted, tokenizer, BEAM_SIZE)
    path = export_translator(translator, tmp_path / "lora")
    variables = tf.train.list_variables(str(path / "variables" / "variables"))
    assert not [name for name, _ in variables if "lora" in name]
    served = load_exported(path)(sentences=tf.constant(sentences[:4]))
    library = translator.translate(sentences[:4])
    assert translation_texts(served["translations"]) == translation_texts(library["translations"])
    assert_close(served["scores"], library["scores"])

    pair = make_translator(Ensemble([model, adapted]), tokenizer, BEAM_SIZE)
    path = export_translator(pair, tmp_path / "ensemble")
    served = load_exported(path)(sentences=tf.constant(sentences[:4]))
    library = pair.translate(sentences[:4])
    assert translation_texts(served["translations"]) == translation_texts(library["translations"])
    assert_close(served["scores"], library["scores"])
