"""The tools load TensorFlow only once their arguments parse (`KERAS_ATTENTION_DEFER_IMPORT`),
and the package's names load on first use (`keras_attention.core.lazy_names`).

Each check runs in a fresh interpreter, since this one has Keras loaded already.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from keras_attention.serving.translator import DEFAULT_CHUNK_SIZE
from tests.tools.test_tools import ROOT, TENSORFLOW_ENV

# The tools that parse their arguments with `keras_attention.cli.ArgumentParser`.
TOOLS = [
    "average_checkpoints",
    "convert_ctranslate2",
    "evaluate",
    "export",
    "make_corpus_shards",
    "train",
    "translate",
]
# Runs a tool's file as `__main__` with `sys.argv[1:]`, then prints, as the last line of
# stdout, its exit status and which of the heavy packages were loaded by then.
PROBE = textwrap.dedent("""
    import json, runpy, sys
    tool, *sys.argv[1:] = sys.argv[1:]
    sys.argv[0] = tool
    try:
        runpy.run_path(tool, run_name="__main__")
        status = 0
    except SystemExit as exit:
        status = exit.code
    heavy = [name for name in ("keras", "tensorflow") if name in sys.modules]
    print(json.dumps({"status": status, "loaded": heavy}))
""")


def probe(tool: str, *args: str) -> tuple[dict, str, str]:
    """Runs `tools/<tool>.py args` under `PROBE`: (its report, stdout before it, stderr)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT / "tools" / f"{tool}.py"), *args],
        capture_output=True, text=True, timeout=300, env=TENSORFLOW_ENV, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    *printed, report = done.stdout.rstrip("\n").split("\n")
    return json.loads(report), "\n".join(printed), done.stderr


def run_python(code: str, env: dict[str, str] | None = None) -> str:
    """Runs `code` in a fresh interpreter that must succeed; returns its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
        timeout=300, env={**TENSORFLOW_ENV, **(env or {})}, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("tool", TOOLS)
def test_help_comes_before_tensorflow_loads(tool: str):
    report, printed, _ = probe(tool, "--help")
    assert report == {"status": 0, "loaded": []}
    assert printed.startswith(f"usage: {tool}.py") and "--verbose" in printed


@pytest.mark.parametrize("tool", TOOLS)
def test_an_unknown_option_fails_before_tensorflow_loads(tool: str):
    report, printed, stderr = probe(tool, "--no-such-option")
    assert report == {"status": 2, "loaded": []}
    assert printed == ""
    [line] = stderr.splitlines()  # one line: a missing argument, or the unknown option
    assert line.startswith("error: ") and ("required" in line or "--no-such-option" in line)


def test_arguments_that_parse_load_keras_quietly():
    """Past the arguments, the tool finds Keras loaded, without TensorFlow's start-up lines:
    a missing run folder is the one line of stderr."""
    report, printed, stderr = probe("translate", "--run-dir", str(ROOT / "no-such-run"))
    assert report == {"status": 2, "loaded": ["keras", "tensorflow"]}
    assert printed == ""
    assert stderr.splitlines() == [
        f"error: no model at {ROOT / 'no-such-run' / 'model.keras'}; train one with tools/train.py"
    ]


def test_export_help_gives_the_exporters_default_chunk_size():
    _, printed, _ = probe("export", "--help")
    assert f"(default {DEFAULT_CHUNK_SIZE})" in " ".join(printed.split())


def test_a_deferred_package_loads_on_parsing_and_registers_its_classes():
    stdout = run_python(
        """
        import json, os, sys
        import keras_attention
        from keras_attention.cli import ArgumentParser
        before = [name for name in ("keras", "tensorflow") if name in sys.modules]
        left = os.environ.get("KERAS_ATTENTION_DEFER_IMPORT")
        ArgumentParser().parse_args([])
        import keras
        registered = keras.saving.get_registered_object("keras_attention>Transformer")
        print(json.dumps({"before": before, "left": left,
                          "registered": registered is keras_attention.Transformer,
                          "layers": "MultiHeadAttention" in keras_attention.__all__}))
        """,
        env={"KERAS_ATTENTION_DEFER_IMPORT": "1"},
    )
    assert json.loads(stdout) == {"before": [], "left": None, "registered": True, "layers": True}


def test_a_deferred_package_loads_on_its_first_name():
    stdout = run_python(
        """
        import sys
        import keras_attention
        print("keras" in sys.modules, keras_attention.PositionalEmbedding.__name__,
              "keras" in sys.modules)
        """,
        env={"KERAS_ATTENTION_DEFER_IMPORT": "1"},
    )
    assert stdout.split() == ["False", "PositionalEmbedding", "True"]


def test_importing_the_package_registers_its_classes_for_load_model():
    stdout = run_python(
        """
        import keras
        import keras_attention
        for name in ("Transformer", "MultiHeadAttention", "TransformerSchedule",
                     "LabelSmoothedCrossEntropy"):
            print(keras.saving.get_registered_object(f"keras_attention>{name}") is not None)
        """
    )
    assert stdout.split() == ["True"] * 4


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A package `lazy_pkg` on `sys.path` whose `__init__` offers `A` and `B` of `parts`,
    and which counts how often `parts` is imported."""
    root = tmp_path / "lazy_pkg"
    root.mkdir()
    (root / "__init__.py").write_text(
        "from keras_attention.core.lazy_names import lazy_names\n"
        "IMPORTS = []\n"
        "__getattr__, __dir__, __all__ = lazy_names(__name__, parts=['A', 'B'])\n"
    )
    (root / "parts.py").write_text("import lazy_pkg\nlazy_pkg.IMPORTS.append(1)\nA, B = 1, 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "lazy_pkg"
    for name in ("lazy_pkg", "lazy_pkg.parts"):
        sys.modules.pop(name, None)


def test_lazy_names_import_their_module_once_on_first_use(package: str):
    lazy = __import__(package)
    assert "parts" not in vars(lazy) and lazy.IMPORTS == []
    assert {"A", "B", "IMPORTS"} <= set(dir(lazy)) and lazy.__all__ == ["A", "B"]
    assert (lazy.A, lazy.B) == (1, 2)
    from lazy_pkg import A  # noqa: F401 (a from-import goes through __getattr__ too)

    assert lazy.IMPORTS == [1] and vars(lazy)["A"] == 1


def test_lazy_names_refuse_a_name_they_do_not_offer(package: str):
    lazy = __import__(package)
    with pytest.raises(AttributeError, match="module 'lazy_pkg' has no attribute 'C'"):
        _ = lazy.C
    assert lazy.IMPORTS == []
