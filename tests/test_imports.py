"""The backend-agnostic modules import only keras, numpy, the stdlib and keras_attention."""

import ast
import sys
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "keras_attention"
ALLOWED_TOP_LEVEL = {"keras", "numpy", "keras_attention"} | set(sys.stdlib_module_names)
FORBIDDEN_TOP_LEVEL = {"tensorflow", "torch", "jax"}


def checked_modules() -> list[Path]:
    """Every module of `keras_attention/layers/`, and `keras_attention/masks.py`."""
    return [*sorted((PACKAGE_ROOT / "layers").glob("*.py")), PACKAGE_ROOT / "masks.py"]


def imported_names(source: str) -> list[str]:
    """The absolute dotted names a module imports (`from a.b import c` gives `a.b.c`)."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names += [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def import_violations(source: str) -> list[str]:
    """The imports of `source` that break the rule, as readable strings."""
    violations = []
    for name in imported_names(source):
        parts = name.split(".")
        top = parts[0]
        if top in FORBIDDEN_TOP_LEVEL or top not in ALLOWED_TOP_LEVEL:
            violations.append(name)
        elif top == "keras" and "src" in parts[1:2]:
            violations.append(f"{name} (keras.src is private)")
    return violations


def test_the_list_of_checked_modules_is_not_empty():
    modules = checked_modules()
    print("checked modules:", *(str(m.relative_to(PACKAGE_ROOT.parent)) for m in modules))
    assert modules
    names = {m.name for m in modules}
    assert {"__init__.py", "multi_head_attention.py", "masks.py"} <= names
    assert all(m.is_file() for m in modules)


@pytest.mark.parametrize(
    "module", checked_modules(), ids=lambda m: str(m.relative_to(PACKAGE_ROOT.parent))
)
def test_module_imports_only_keras_numpy_stdlib_and_keras_attention(module: Path):
    violations = import_violations(module.read_text())
    assert not violations, f"{module.name} imports {violations}"


@pytest.mark.parametrize(
    "source",
    [
        "import tensorflow as tf",
        "import torch.nn",
        "from jax import numpy as jnp",
        "from keras.src.layers import Dense",
        "from keras import src",
        "import keras.src.ops",
        "import scipy",
        "def f():\n    import tensorflow\n",
    ],
)
def test_the_checker_catches_forbidden_imports(source: str):
    assert import_violations(source)


@pytest.mark.parametrize(
    "source",
    [
        "import keras\nfrom keras import ops",
        "import numpy as np",
        "import math\nfrom collections.abc import Callable",
        "from keras_attention import masks\nfrom keras_attention.layers.validation import x",
        "from . import masks",
    ],
)
def test_the_checker_accepts_allowed_imports(source: str):
    assert import_violations(source) == []
