"""The tutorial notebooks: each one runs top to bottom (small mode), and the committed files are
clean (no outputs, no execution counts, under 1 MiB).

Small mode (`KERAS_ATTENTION_NOTEBOOK_SMALL=1`) shrinks the corpora, models, epochs and
sentences, so that the four notebooks run in a few minutes on two CPU cores. Each notebook
runs in a temporary folder, so its files (`runs/...`) never land in the repository.
"""

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
EXPECTED = ["01_quickstart", "02_attention", "03_custom_models", "04_serving"]
MAX_BYTES = 1024 * 1024
CELL_TIMEOUT_S = 600


def test_every_tutorial_notebook_is_there():
    assert [path.stem for path in NOTEBOOKS] == EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_committed_notebook_is_clean(path: Path):
    assert path.stat().st_size < MAX_BYTES, f"{path.name} is {path.stat().st_size} bytes"
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert notebook.nbformat == 4
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code_cells
    for index, cell in enumerate(code_cells):
        assert cell.outputs == [], f"{path.name}: code cell {index} has outputs"
        assert cell.execution_count is None, f"{path.name}: code cell {index} has a count"
    # The small/full switch is the notebook's own first code cell.
    assert 'os.environ.get("KERAS_ATTENTION_NOTEBOOK_SMALL") == "1"' in code_cells[0].source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_runs_in_small_mode(path: Path, tmp_path: Path, monkeypatch):
    # The kernel inherits this process's environment.
    monkeypatch.setenv("KERAS_ATTENTION_NOTEBOOK_SMALL", "1")
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},  # the kernel's working directory
    )
    try:
        client.execute()  # raises CellExecutionError on the first failing cell
    except nbclient.exceptions.CellExecutionError as error:
        pytest.fail(f"{path.name} failed in small mode:\n{error}")
    errors = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "error"
    ]
    assert not errors, f"{path.name}: {[(e.ename, e.evalue) for e in errors]}"
    assert os.listdir(tmp_path), "the notebook wrote its files elsewhere than its folder"
