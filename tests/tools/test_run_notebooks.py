"""tools/run_notebooks.py: runs notebooks in full mode and writes them back with outputs.

The notebooks here are tiny ones written by the test (the real ones train models for
minutes; `tests/system/test_notebooks.py` runs those in small mode): a kernel starts for
each, in a few seconds.
"""

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

from tools import run_notebooks  # noqa: E402 (after the skips: it imports nbclient)

ROOT = Path(__file__).resolve().parents[2]

FIRST_CELL = """import os

SMALL = os.environ.get("KERAS_ATTENTION_NOTEBOOK_SMALL") == "1"
print("small mode" if SMALL else "full mode")"""
IMPORT_CELL = """from pathlib import Path

import keras_attention_cli

print(Path(keras_attention_cli.__file__).resolve().parents[1] == Path({root!r}))
print(Path.cwd() == Path({notebook_dir!r}))
Path("runs").mkdir()"""


def write_tiny(folder: Path, name: str, *sources: str) -> Path:
    """A notebook of a markdown cell and one code cell a source, without outputs."""
    notebook = nbformat.v4.new_notebook()
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata = {"kernelspec": kernelspec, "language_info": {"name": "python"}}
    notebook.cells = [nbformat.v4.new_markdown_cell(f"# {name}")]
    notebook.cells += [nbformat.v4.new_code_cell(source) for source in sources]
    path = folder / f"{name}.ipynb"
    path.write_text(nbformat.writes(notebook) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow  # starts a kernel
def test_runs_in_full_mode_and_writes_the_outputs_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
):
    monkeypatch.setenv("KERAS_ATTENTION_NOTEBOOK_SMALL", "1")  # the tool runs them in full mode
    monkeypatch.chdir(tmp_path)
    import_cell = IMPORT_CELL.format(root=str(ROOT), notebook_dir=str(tmp_path))
    path = write_tiny(tmp_path, "01_tiny", FIRST_CELL, import_cell)
    before = nbformat.read(path, as_version=4)
    assert run_notebooks.main(["--notebook-dir", str(tmp_path), "01"]) == 0

    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    first, imported = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert [output.text for output in first.outputs] == ["full mode\n"]
    # This checkout's package, and the kernel ran elsewhere than the notebooks' folder.
    assert [output.text for output in imported.outputs] == ["True\nFalse\n"]
    assert [first.execution_count, imported.execution_count] == [1, 2]
    # Nothing that changes between runs besides the outputs: no execution times, no
    # kernel version details; the file keeps its layout.
    assert notebook.metadata == before.metadata
    assert all(cell.metadata == {} for cell in notebook.cells)
    assert path.read_text(encoding="utf-8") == nbformat.writes(notebook) + "\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["01_tiny.ipynb"]
    assert capsys.readouterr().out.startswith("01_tiny.ipynb: ")
    assert os.environ["KERAS_ATTENTION_NOTEBOOK_SMALL"] == "1"  # this process's is untouched


@pytest.mark.slow  # starts a kernel
def test_a_failing_notebook_is_left_as_it_was(tmp_path: Path, capsys: pytest.CaptureFixture):
    path = write_tiny(tmp_path, "02_fails", "print('ran')", "raise ValueError('no data')")
    before = path.read_bytes()
    with pytest.raises(SystemExit) as exit_info:
        run_notebooks.main(["--notebook-dir", str(tmp_path)])
    assert exit_info.value.code == 1
    error = capsys.readouterr().err
    assert error == "error: 02_fails.ipynb failed, left as it was: ValueError: no data\n"
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["04_nope"], "error: unknown notebook '04_nope'; choose from 01_a, 02_b"),
        (["0"], "error: unknown notebook '0'; choose from 01_a, 02_b"),
        (["--timeout", "0"], "error: argument --timeout: must be >= 1; got 0"),
    ],
)
def test_a_user_error_is_one_line_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture, args: list[str], message: str
):
    for name in ("01_a", "02_b"):
        write_tiny(tmp_path, name, "print(1)")
    with pytest.raises(SystemExit) as exit_info:
        run_notebooks.main(["--notebook-dir", str(tmp_path), *args])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == message + "\n"


def test_names_pick_notebooks_by_stem_file_name_or_number(tmp_path: Path):
    paths = [write_tiny(tmp_path, name, "print(1)") for name in ("01_a", "02_b", "03_c")]
    pick = run_notebooks.select_notebooks
    assert pick(tmp_path, []) == paths
    assert pick(tmp_path, ["03", "01_a.ipynb", "01_a"]) == [paths[0], paths[2]]
    with pytest.raises(ValueError, match=r"--notebook-dir: no folder .*missing"):
        pick(tmp_path / "missing", [])
