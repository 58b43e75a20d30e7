"""The package as the package index gets it: its metadata (setup.cfg), one version source, the
extras, the console scripts, the LICENSE and `py.typed` in the wheel."""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from setuptools.config.setupcfg import read_configuration

ROOT = Path(__file__).resolve().parents[2]
TOOLS = (
    "train",
    "translate",
    "evaluate",
    "export",
    "average_checkpoints",
    "convert_ctranslate2",
    "make_corpus_shards",
)


@pytest.fixture(scope="module")
def config() -> dict:
    return read_configuration(str(ROOT / "setup.cfg"))


def requirement_names(requirements: list[str]) -> set[str]:
    """The distribution names of requirement lines (`tensorflow>=2.18` -> `tensorflow`)."""
    return {re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0].lower() for line in requirements}


def test_the_distribution_name_is_the_free_one_and_the_import_name_is_kept(config):
    # `keras-attention` on the package index is another project with the same import name.
    assert config["metadata"]["name"] == "keras-attention-transformer"
    assert {"keras_attention", "keras_attention_cli"} <= set(config["options"]["packages"])
    assert not any(name.startswith(("tests", "tools")) for name in config["options"]["packages"])


def test_the_version_is_written_once(config):
    from keras_attention.version import __version__

    assert config["metadata"]["version"] == __version__
    written = [
        path.relative_to(ROOT).as_posix()
        for folder in ("keras_attention", "keras_attention_cli")
        for path in (ROOT / folder).rglob("*.py")
        if re.search(r"^__version__\s*=", path.read_text(encoding="utf-8"), re.MULTILINE)
    ]
    assert written == ["keras_attention/version.py"]
    assert "version = attr: keras_attention.version.__version__" in (ROOT / "setup.cfg").read_text(
        encoding="utf-8"
    )


def test_a_plain_install_needs_keras_and_numpy_only(config):
    assert requirement_names(config["options"]["install_requires"]) == {"keras", "numpy"}


def test_the_extras_nest_train_in_serve_in_dev(config):
    extras = {name: requirement_names(lines) for name, lines in config["options"][
        "extras_require"
    ].items()}  # fmt: skip
    assert set(extras) == {"train", "serve", "docs", "dev"}
    assert {"tensorflow", "tensorflow-text", "sentencepiece", "sacrebleu"} <= extras["train"]
    assert extras["train"] <= extras["serve"]
    assert {"tensorflow-serving-api", "ctranslate2"} <= extras["serve"]
    assert {"mkdocs", "mkdocs-material", "mkdocstrings"} <= extras["docs"]
    assert extras["serve"] | extras["docs"] <= extras["dev"]
    assert {"pytest", "keras-hub", "matplotlib", "torch", "jax", "ruff"} <= extras["dev"]


def test_every_tool_is_a_console_script(config):
    scripts = dict(
        line.replace(" ", "").split("=", 1)
        for line in config["options"]["entry_points"]["console_scripts"]
    )
    expected = {
        "keras-attention-" + tool.replace("_", "-"): f"keras_attention_cli.commands.{tool}:main"
        for tool in TOOLS
    }
    assert scripts == expected
    for target in scripts.values():
        module, _, function = target.partition(":")
        if (ROOT / Path(*module.split("."))).with_suffix(".py").exists():
            assert callable(getattr(importlib.import_module(module), function)), target


def test_the_licence_is_the_apache_licence_in_full(config):
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert config["metadata"]["license"] == "Apache-2.0"
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_the_change_log_has_the_current_version():
    from keras_attention.version import __version__

    assert f"## {__version__} " in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def test_the_layers_import_without_tensorflow():
    """A JAX user of the layers does not load TensorFlow (a plain install has none)."""
    code = (
        "import sys, numpy as np, keras_attention as ka\n"
        "y = ka.layers.PositionalEmbedding(vocabulary_size=10, d_model=8)(np.array([[1, 2]]))\n"
        "print(tuple(y.shape), 'tensorflow' in sys.modules)\n"
    )
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[-2] == "(1, 2, 8) False"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    """The wheel built from a copy of the project's packaging files (no build files left here)."""
    source = tmp_path_factory.mktemp("source")
    for name in (
        "setup.cfg",
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "MANIFEST.in",
        "CHANGELOG.md",
    ):
        shutil.copy(ROOT / name, source / name)
    for package in ("keras_attention", "keras_attention_cli"):
        shutil.copytree(
            ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    out = tmp_path_factory.mktemp("wheel")
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    done = subprocess.run(
        [*command, "-w", str(out), str(source)], capture_output=True, text=True, timeout=300
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (path,) = out.glob("keras_attention_transformer-*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_ships_py_typed_the_licence_and_the_console_scripts(wheel):
    from keras_attention.version import __version__

    names = set(wheel.namelist())
    assert {"keras_attention/py.typed", "keras_attention_cli/py.typed"} <= names
    assert "keras_attention/layers/__init__.py" in names
    assert not any(name.startswith(("tests/", "tools/")) for name in names)
    info = f"keras_attention_transformer-{__version__}.dist-info"
    assert any(n.startswith(f"{info}/") and n.endswith("LICENSE") for n in names), names
    scripts = wheel.read(f"{info}/entry_points.txt").decode()
    assert "keras-attention-train = keras_attention_cli.commands.train:main" in scripts
    metadata = wheel.read(f"{info}/METADATA").decode()
    assert "Requires-Dist: keras>=3.8" in metadata
    assert 'Requires-Dist: tensorflow>=2.18; extra == "train"' in metadata


# The import names of the distributions the package may import, by where they are declared.
IMPORT_NAMES = {
    "keras": "keras",
    "numpy": "numpy",
    "tensorflow": "tensorflow",
    "tensorflow_text": "tensorflow-text",
    "tensorboard": "tensorboard",
    "sentencepiece": "sentencepiece",
    "sacrebleu": "sacrebleu",
    "sacremoses": "sacremoses",
    "matplotlib": "matplotlib",
    "tensorflow_serving": "tensorflow-serving-api",
    "ctranslate2": "ctranslate2",
    # Installed by a declared distribution: h5py by Keras, protobuf (`google.protobuf`) by TF.
    "h5py": "keras",
    "google": "tensorflow",
}


def imported_top_level_names(package: Path) -> set[str]:
    """The top-level module names that the package's files import (any depth, any place)."""
    import ast

    names = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def test_every_third_party_import_of_the_package_is_declared(config):
    # The training tools, whose extra is `train`, reach everything but CTranslate2's converter.
    third_party = imported_top_level_names(ROOT / "keras_attention") - set(sys.stdlib_module_names)
    third_party -= {"keras_attention", "keras_attention_cli"}
    unknown = third_party - set(IMPORT_NAMES)
    assert not unknown, f"imports without a declared distribution: {sorted(unknown)}"
    extras = config["options"]["extras_require"]
    declared = requirement_names(config["options"]["install_requires"])
    train = declared | requirement_names(extras["train"])
    serve = train | requirement_names(extras["serve"])
    assert {IMPORT_NAMES[name] for name in third_party} <= serve
    assert {IMPORT_NAMES[name] for name in third_party} - {"ctranslate2"} <= train
