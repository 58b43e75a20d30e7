"""The repository's own files are never ignored by git (a new module under an ignored name,
such as `runs/`, would be missing from every clone while passing here)."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE_FOLDERS = ("keras_attention", "tools", "tests", "notebooks", "docs")


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
