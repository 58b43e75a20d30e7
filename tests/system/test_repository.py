"""The repository's own files are never ignored by git (a new module under an ignored name,
such as `runs/`, would be missing from every clone while passing here), and the tests mirror
the package (docs/architecture.md, Conventions: "Tests mirror the package")."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE_FOLDERS = ("keras_attention", "tools", "tests", "notebooks", "docs")
TESTS = ROOT / "tests"
# The tests of the library as a whole (layering, repository, notebooks, properties across
# modules, keras-hub parity, the reliability checks that run several tools end to end).
WHOLE_LIBRARY_FOLDER = "system"


def source_files() -> list[str]:
    """The project's source files, relative to the repository root."""
    files = []
    for folder in SOURCE_FOLDERS:
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in {".py", ".ipynb", ".md", ".sh"} and "__pycache__" not in path.parts:
                files.append(str(path.relative_to(ROOT)))
    return sorted(files)


@pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout"
)
def test_no_source_file_is_ignored_by_git():
    files = source_files()
    assert "keras_attention/runs/train.py" in files and "tests/serving/conftest.py" in files
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"],
        input="\n".join(files), capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    assert done.stdout.split() == []


def package_parts(root: Path = ROOT) -> tuple[set[str], set[str]]:
    """The folders a test may sit in, relative to `tests/`, and the package's top-level modules.

    A folder is a package of `keras_attention/` (`core`, `runs`, ...), `tools` or one of its
    packages (`tools/benchmarks`), or the whole-library folder; "" (`tests/` itself) holds the
    tests of the top-level modules (`masks`, `evaluation`), as `test_<module>.py`.
    """
    package = root / "keras_attention"
    folders = {WHOLE_LIBRARY_FOLDER, "tools"}
    for init in package.rglob("__init__.py"):
        if init.parent != package:
            folders.add(init.parent.relative_to(package).as_posix())
    for init in (root / "tools").rglob("__init__.py"):
        folders.add(("tools" / init.parent.relative_to(root / "tools")).as_posix())
    top_modules = {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
    return folders, top_modules


def misplaced_tests(test_files: list[str], folders: set[str], top_modules: set[str]) -> list[str]:
    """The test files (paths relative to `tests/`) that sit in no folder of a package part."""
    misplaced = []
    for name in test_files:
        folder, _, file_name = name.rpartition("/")
        if folder:
            placed = folder in folders
        else:
            placed = file_name.removeprefix("test_").removesuffix(".py") in top_modules
        if not placed:
            misplaced.append(name)
    return misplaced


def all_test_files() -> list[str]:
    """Every `test_*.py` under `tests/`, relative to it."""
    return sorted(
        path.relative_to(TESTS).as_posix()
        for path in TESTS.rglob("test_*.py")
        if "__pycache__" not in path.parts
    )


def test_every_test_file_sits_in_the_folder_of_a_package_part():
    files = all_test_files()
    assert "runs/test_files.py" in files and "system/test_repository.py" in files
    folders, top_modules = package_parts()
    assert {"core", "runs", "serving", "tools", "tools/benchmarks", "system"} <= folders
    assert {"masks", "evaluation"} <= top_modules
    assert misplaced_tests(files, folders, top_modules) == [], (
        "a test of keras_attention/X/ goes in tests/X/, of tools/ in tests/tools/, of a "
        "top-level module keras_attention/y.py in tests/test_y.py, of the whole library in "
        f"tests/{WHOLE_LIBRARY_FOLDER}/"
    )


def test_the_layout_check_catches_a_flat_file_and_an_unknown_folder():
    folders, top_modules = package_parts()
    flat_and_unknown = ["test_rounds.py", "scripts/test_x.py", "tools/other/test_y.py"]
    assert misplaced_tests(flat_and_unknown, folders, top_modules) == flat_and_unknown
    placed = ["test_masks.py", "distribute/test_cluster.py", "tools/benchmarks/test_decode.py"]
    assert misplaced_tests(placed, folders, top_modules) == []


def test_every_test_folder_is_a_package():
    """Tests import each other as `tests.<folder>.test_x`: each folder needs its `__init__.py`."""
    folders = {(TESTS / name).parent for name in all_test_files()}
    assert TESTS / "runs" in folders
    missing = [f.relative_to(TESTS).as_posix() for f in folders if not (f / "__init__.py").exists()]
    assert sorted(missing) == []
