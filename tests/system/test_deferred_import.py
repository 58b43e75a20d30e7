"""The tools parse their arguments before they import the library, by structure: their
module-level imports are the standard library and `keras_attention_cli`, which loads nothing
of `keras_attention`; `import keras_attention` does the same whatever the environment; the
subpackages' names load on first use (`keras_attention.core.lazy_names`).

Each check of a tool or of an import runs in a fresh interpreter, since this one has Keras
loaded already.
"""

import ast
import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from keras_attention.core import quiet_import
from keras_attention.data.datasets import DATASETS
from keras_attention.models.presets import PRESETS
from keras_attention.runs.config import MIXED_PRECISION_POLICIES, TrainConfig
from keras_attention.runs.recipes import RECIPE_NAMES
from keras_attention.serving.translator import DEFAULT_CHUNK_SIZE
from keras_attention_cli.arguments import QUIET_VARIABLE, ArgumentParser
from keras_attention_cli.commands import train
from tests.tools.test_tools import ROOT, TENSORFLOW_ENV

# The tools that parse their arguments with `keras_attention_cli.arguments.ArgumentParser`.
TOOLS = [
    "average_checkpoints",
    "convert_ctranslate2",
    "evaluate",
    "export",
    "make_corpus_shards",
    "train",
    "translate",
]
HEAVY = ("keras", "tensorflow", "keras_attention")
# Runs a tool's file as `__main__` with `sys.argv[1:]`, then prints, as the last line of
# stdout, its exit status and which of the heavy packages were loaded by then.
PROBE = textwrap.dedent(f"""
    import json, runpy, sys
    tool, *sys.argv[1:] = sys.argv[1:]
    sys.argv[0] = tool
    try:
        runpy.run_path(tool, run_name="__main__")
        status = 0
    except SystemExit as exit:
        status = exit.code
    heavy = [name for name in {HEAVY!r} if name in sys.modules]
    print(json.dumps({{"status": status, "loaded": heavy}}))
""")
CLI_ROOT = ROOT / "keras_attention_cli"
ALLOWED_BEFORE_PARSING = set(sys.stdlib_module_names) | {"keras_attention_cli"}


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


def top_level_imports(source: str) -> list[str]:
    """The top-level packages that a module's own statements import when it loads: those
    outside functions and `if TYPE_CHECKING:` blocks (and `if __name__ == "__main__":`)."""
    names = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import):
            names += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module.split(".")[0])
    return names


def imports_before_parsing(source: str) -> list[str]:
    """The top-level imports of a tool that are neither the standard library nor
    `keras_attention_cli`: what would load before its arguments parse."""
    return [name for name in top_level_imports(source) if name not in ALLOWED_BEFORE_PARSING]


@pytest.mark.parametrize("tool", TOOLS)
def test_a_tool_imports_only_the_stdlib_and_the_cli_package_when_it_loads(tool: str):
    assert imports_before_parsing((ROOT / "tools" / f"{tool}.py").read_text()) == []


@pytest.mark.parametrize(
    "source",
    ["import keras", "from keras_attention.runs.config import TrainConfig",
     "import tensorflow as tf", "from keras_attention import cli"],
)  # fmt: skip
def test_the_import_check_catches_the_library_before_parsing(source: str):
    assert imports_before_parsing(source)


def test_the_import_check_leaves_imports_in_functions_and_type_checking_blocks():
    source = textwrap.dedent("""
        import os
        from typing import TYPE_CHECKING
        from keras_attention_cli.errors import fail
        if TYPE_CHECKING:
            from keras_attention.runs.config import TrainConfig
        def main():
            import keras_attention
    """)
    assert imports_before_parsing(source) == []


@pytest.mark.parametrize("module", sorted(CLI_ROOT.glob("*.py")), ids=lambda path: path.name)
def test_the_cli_package_imports_only_the_stdlib_and_itself(module: Path):
    assert set(top_level_imports(module.read_text())) <= ALLOWED_BEFORE_PARSING


def test_importing_the_cli_package_loads_nothing_of_the_library():
    stdout = run_python(
        f"""
        import json, sys
        import keras_attention_cli.arguments, keras_attention_cli.errors
        import keras_attention_cli.files
        print(json.dumps([name for name in {HEAVY!r} if name in sys.modules]))
        """
    )
    assert json.loads(stdout) == []


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
    """Past the arguments, the tool imports the library, without TensorFlow's start-up lines:
    a missing run folder is the one line of stderr."""
    report, printed, stderr = probe("translate", "--run-dir", str(ROOT / "no-such-run"))
    assert report == {"status": 2, "loaded": list(HEAVY)}
    assert printed == ""
    assert stderr.splitlines() == [
        f"error: no model at {ROOT / 'no-such-run' / 'model.keras'}; train one with tools/train.py"
    ]


def test_export_help_gives_the_exporters_default_chunk_size():
    _, printed, _ = probe("export", "--help")
    assert f"(default {DEFAULT_CHUNK_SIZE})" in " ".join(printed.split())


def test_train_help_gives_the_configs_default_output_folder():
    _, printed, _ = probe("train", "--help")
    assert f"(default: {TrainConfig().output_dir})" in " ".join(printed.split())


def test_the_train_tools_names_are_the_librarys(monkeypatch: pytest.MonkeyPatch):
    """`tools/train.py` offers the library's names without importing it."""
    monkeypatch.delenv(QUIET_VARIABLE, raising=False)  # which parsing sets
    assert train.RECIPE_NAMES == RECIPE_NAMES
    assert tuple(sorted(PRESETS)) == train.PRESET_NAMES
    assert train.DATASET_NAMES == DATASETS
    assert train.MIXED_PRECISION_POLICIES == MIXED_PRECISION_POLICIES
    defaults = {field.name: field.default for field in dataclasses.fields(TrainConfig)}
    # An option left out takes the config's default, which no option can give as None.
    assert all(defaults[name] is not None for name in train.CONFIG_DEFAULTS)
    config, _, _ = train.parse_args([])
    assert config == TrainConfig(model_overrides={})
    config, _, _ = train.parse_args(["--seed", "3", "--max-length", "32"])
    assert (config.seed, config.max_length, config.output_dir) == (3, 32, "runs/translator")


@pytest.mark.parametrize(
    ("environment", "argv", "expected"),
    [({}, [], "1"), ({}, ["--verbose"], "0"), ({QUIET_VARIABLE: "0"}, [], "0"),
     ({QUIET_VARIABLE: "1"}, ["--verbose"], "0")],
)  # fmt: skip
def test_parsing_sets_the_quiet_import_unless_verbose(
    monkeypatch: pytest.MonkeyPatch, environment: dict, argv: list[str], expected: str
):
    monkeypatch.delenv(QUIET_VARIABLE, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    ArgumentParser().parse_args(argv)
    assert os.environ[QUIET_VARIABLE] == expected
    assert QUIET_VARIABLE == quiet_import.QUIET_VARIABLE  # the variable the library reads


# What `import keras_attention` did: its modules, Keras's, its registered classes and names,
# and whether `load_model`'s look-up finds the classes it reads.
IMPORT_REPORT = """
    import json, os, sys
    import keras_attention
    import keras
    registered = sorted(name for name in keras.saving.get_custom_objects()
                        if name.startswith("keras_attention>"))
    found = [keras.saving.get_registered_object(f"keras_attention>{name}") is not None
             for name in ("Transformer", "MultiHeadAttention", "TransformerSchedule",
                          "LabelSmoothedCrossEntropy")]
    print(json.dumps({
        "modules": sorted(name for name in sys.modules if name.startswith("keras_attention")),
        "keras": "keras" in sys.modules, "registered": registered, "found": found,
        "all": sorted(keras_attention.__all__),
        "left": os.environ.get("KERAS_ATTENTION_DEFER_IMPORT"),
    }))
"""


@pytest.fixture(scope="module")
def import_reports() -> list[dict]:
    """`IMPORT_REPORT` of a fresh interpreter in each environment: none set, the variable that
    once deferred the import, the quiet import."""
    environments = [{}, {"KERAS_ATTENTION_DEFER_IMPORT": "1"}, {QUIET_VARIABLE: "1"}]
    return [json.loads(run_python(IMPORT_REPORT, env)) for env in environments]


def test_importing_the_package_does_the_same_in_any_environment(import_reports: list[dict]):
    """The variable that once deferred the import, or the quiet import, change nothing of
    what the package imports and registers (and the package leaves the environment alone)."""
    plain = import_reports[0]
    assert plain["keras"] and "keras_attention>Transformer" in plain["registered"]
    assert "keras_attention>MultiHeadAttention" in plain["registered"]
    assert "Transformer" in plain["all"] and "MultiHeadAttention" in plain["all"]
    assert import_reports[1] == {**plain, "left": "1"}
    assert import_reports[2] == plain


def test_importing_the_package_registers_its_classes_for_load_model(import_reports: list[dict]):
    assert import_reports[0]["found"] == [True] * 4


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
