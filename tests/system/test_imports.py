"""The backend-agnostic modules import only keras, numpy, the stdlib and keras_attention."""

import ast
import sys
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[2] / "keras_attention"
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
        "from keras_attention import masks\nfrom keras_attention.core.checks import x",
        "from . import masks",
    ],
)
def test_the_checker_accepts_allowed_imports(source: str):
    assert import_violations(source) == []


# The package's layering: every import points down (or across, without a cycle).

# The level of each part of the package, from the bottom: a module may import modules of its
# own level or below. Any module not named here fails `test_every_module_has_a_level`.
LEVELS = {
    "keras_attention.core": 0,  # ids, argument checks, buffers, atomic files
    "keras_attention.distribute": 1,  # strategies, clusters, replicas, backups
    "keras_attention.layers": 2,
    "keras_attention.masks": 2,
    "keras_attention.data": 3,
    "keras_attention.training": 3,
    "keras_attention.models": 4,
    "keras_attention.decoding": 5,
    "keras_attention.serving.chunks": 5,  # length-sorted chunks of a batch, in the graph
    "keras_attention.serving.warmup_requests": 5,  # TF Serving's warm-up file
    "keras_attention.serving.alignment": 5,  # Pharaoh alignments from the cross-attention
    "keras_attention.serving.translator": 6,  # strings in, strings out: one TF graph
    "keras_attention.serving.export": 6,  # a translator as a SavedModel; staging and locks
    "keras_attention.evaluation": 6,
    "keras_attention.runs": 7,  # a training run, one job per module (see its docstring)
    "keras_attention.serving.ctranslate2_converter": 6,  # a model as CTranslate2's; optional
    "keras_attention": 9,  # the package itself imports its public parts
    # The tools' parser, errors and files: no import of the package at its top level, so
    # that the tools parse before the library loads (tests/system/test_deferred_import.py).
    "keras_attention_cli": 9,
    "tools": 10,  # the command lines and benchmarks, above the whole package
}
TOOLS_ROOT = PACKAGE_ROOT.parent / "tools"
CLI_ROOT = PACKAGE_ROOT.parent / "keras_attention_cli"


def package_modules(root: Path = PACKAGE_ROOT) -> dict[str, Path]:
    """Every module under `root` by dotted name (a package by its own name)."""
    modules = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def absolute_name(node: ast.ImportFrom, importer: str, packages: set[str]) -> str:
    """The absolute module of a `from ... import`: relative imports resolved against the
    importer's package, and `benchmarks.x` (how `tools/benchmark.py` imports its
    modules, with `tools/` on its path) named `tools.benchmarks.x`."""
    if node.level:
        package = importer if importer in packages else importer.rpartition(".")[0]
        base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
        return f"{base}.{node.module}" if node.module else base
    if node.module == "benchmarks" or node.module.startswith("benchmarks."):
        return f"tools.{node.module}"
    return node.module


def level(module: str) -> int | None:
    """The level of `module`: that of the longest prefix in `LEVELS`."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in LEVELS:
            return LEVELS[".".join(parts[:end])]
    return None


def package_imports(
    source: str, modules: set[str], importer: str = "", packages: frozenset[str] = frozenset()
) -> set[str]:
    """The modules of `modules` that `source` imports, anywhere in it (functions and
    `TYPE_CHECKING` blocks included): `from a import b` imports `a.b` if that is a module;
    relative imports are resolved against `importer`, a package if it is in `packages`."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or node.level):
            module = absolute_name(node, importer, packages)
            names = [
                f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module
                for alias in node.names
            ]
        else:
            continue
        found |= {name for name in names if name in modules}
    return found


def import_graph(
    sources: dict[str, str], packages: frozenset[str] = frozenset()
) -> dict[str, set[str]]:
    """Each module's direct imports of the others, from their sources (`packages`: the
    names that are packages, for relative imports)."""
    names = set(sources)
    return {
        name: package_imports(source, names, name, packages) - {name}
        for name, source in sources.items()
    }


def layering_violations(graph: dict[str, set[str]]) -> list[str]:
    """Imports that point up a level, and import cycles, found by following every module's
    imports transitively."""
    violations = []
    for module, imported in sorted(graph.items()):
        for other in sorted(imported):
            if level(other) > level(module):
                violations.append(f"{module} (level {level(module)}) imports {other} "
                                  f"(level {level(other)})")  # fmt: skip
    for module in sorted(graph):
        reached, frontier = set(), list(graph[module])
        while frontier:
            other = frontier.pop()
            if other not in reached:
                reached.add(other)
                frontier += graph[other]
        if module in reached:
            violations.append(f"{module} imports itself through a cycle")
    return violations


def package_graph() -> dict[str, set[str]]:
    """The import graph of the package, of `keras_attention_cli` and of `tools/` (the
    command lines and benchmarks)."""
    modules = {**package_modules(), **package_modules(CLI_ROOT), **package_modules(TOOLS_ROOT)}
    packages = frozenset(name for name, path in modules.items() if path.name == "__init__.py")
    return import_graph({name: path.read_text() for name, path in modules.items()}, packages)


def test_every_module_has_a_level():
    modules = {**package_modules(), **package_modules(CLI_ROOT)}
    assert [name for name in modules if level(name) is None] == []


def test_imports_point_down_and_never_in_a_circle():
    graph = package_graph()
    assert len(graph) > 40 and graph["keras_attention.runs.train"]
    # tools/ is in the graph, with its relative and `benchmarks.` imports resolved.
    assert "tools.benchmarks.decode_throughput" in graph["tools.benchmarks.engines"]
    assert "tools.benchmarks.decode" in graph["tools.benchmark"]
    assert "keras_attention_cli.commands.translate" in graph["tools.translate"]
    assert layering_violations(graph) == []


@pytest.mark.parametrize(
    ("sources", "expected"),
    [
        (  # a layer that imports the training code: up a level
            {"keras_attention.layers.a": "from keras_attention.training import b",
             "keras_attention.training.b": ""},
            ["keras_attention.layers.a (level 2) imports keras_attention.training.b (level 3)"],
        ),
        (  # a circle of three modules on one level, one import inside a function
            {"keras_attention.runs.train": "import keras_attention.runs.selection",
             "keras_attention.runs.selection": "def f():\n    import keras_attention.runs.files",
             "keras_attention.runs.files": "from keras_attention.runs.train import x"},
            [f"keras_attention.runs.{name} imports itself through a cycle"
             for name in ("files", "selection", "train")],
        ),
        (  # two benchmarks that import each other, one relatively, inside a function
            {"tools.benchmarks.a": "def f():\n    from .b import g",
             "tools.benchmarks.b": "from benchmarks.a import f"},
            [f"tools.benchmarks.{name} imports itself through a cycle" for name in "ab"],
        ),
        (  # the package importing a tool: up a level
            {"keras_attention.runs.a": "from tools import train", "tools.train": ""},
            ["keras_attention.runs.a (level 7) imports tools.train (level 10)"],
        ),
    ],
)  # fmt: skip
def test_the_layering_check_can_fail(sources: dict[str, str], expected: list[str]):
    assert layering_violations(import_graph(sources)) == expected


def module_level_imports(source: str) -> list[str]:
    """The names imported by the statements at a module's top level (not in functions)."""
    names = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def reached_from(graph: dict[str, set[str]], modules: list[str]) -> set[str]:
    """`modules` and every module they import, followed to the end."""
    reached, frontier = set(), list(modules)
    while frontier:
        module = frontier.pop()
        if module not in reached:
            reached.add(module)
            frontier += graph.get(module, ())
    return reached


def test_the_layers_load_no_backend_package_even_transitively():
    """What `keras_attention.layers` imports, followed to the end, loads only keras, numpy
    and the standard library when it is imported."""
    graph, modules = package_graph(), package_modules()
    reached = reached_from(graph, ["keras_attention.layers", "keras_attention.masks"])
    assert "keras_attention.layers.multi_head_attention" in reached
    assert "keras_attention.training" not in reached
    for module in sorted(reached):
        tops = {name.split(".")[0] for name in module_level_imports(modules[module].read_text())}
        assert tops <= ALLOWED_TOP_LEVEL, f"{module} imports {tops - ALLOWED_TOP_LEVEL}"


def test_the_layers_and_models_reach_no_module_of_distribute():
    """The layers and the Transformer are plain Keras: what a strategy needs is applied by
    `distribute/` to the model a run trains, never built into them (issue 36)."""
    graph = package_graph()
    for start in ("keras_attention.layers", "keras_attention.models.transformer"):
        reached = reached_from(graph, [start])
        assert "keras_attention.layers.transformer_encoder" in reached  # the graph is followed
        assert sorted(m for m in reached if m.startswith("keras_attention.distribute")) == []


def test_reaching_distribute_is_caught():
    graph = {"keras_attention.layers": {"keras_attention.layers.a"},
             "keras_attention.layers.a": {"keras_attention.distribute.replicas"},
             "keras_attention.distribute.replicas": set()}  # fmt: skip
    assert "keras_attention.distribute.replicas" in reached_from(graph, ["keras_attention.layers"])
