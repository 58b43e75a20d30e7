"""The tutorial notebooks: the committed files carry the outputs of a full-mode run, and each
notebook still runs top to bottom (small mode).

`tools/run_notebooks.py` runs them in full mode and writes them back with their outputs, so
that GitHub and the documentation show their figures: each committed file has all its code
cells run, a picture wherever a cell plots, no error, no TensorFlow start-up line on stderr
(the first code cell imports `keras_attention` quietly before anything else imports
TensorFlow), and stays under 1 MiB.

Small mode (`KERAS_ATTENTION_NOTEBOOK_SMALL=1`) shrinks the corpora, models, epochs and
sentences, so that the five notebooks run in a few minutes on two CPU cores. Each notebook
runs in a temporary folder, so its files (`runs/...`) never land in the repository, and
imports this checkout's package; its outputs are checked, not written.
"""

import os
import re
from pathlib import Path

import pytest

from tests.run_helpers import NATIVE_LOG_LINE

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
EXPECTED = ["01_quickstart", "02_attention", "03_custom_models", "04_serving", "05_paper_claims"]
MAX_BYTES = 1024 * 1024
CELL_TIMEOUT_S = 600
# TensorFlow's start-up and C++ log lines, and the rest of its start-up notes.
TENSORFLOW_NOISE = re.compile(
    rf"{NATIVE_LOG_LINE.pattern}|cuInit|TF_ENABLE_ONEDNN_OPTS|rebuild TensorFlow with"
)
QUIET_FIRST_CELL = [
    'os.environ["KERAS_ATTENTION_QUIET"] = "1"',
    'os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"',
    "import keras_attention",
    'os.environ.get("KERAS_ATTENTION_NOTEBOOK_SMALL") == "1"',
]


def code_cells(notebook) -> list:
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def outputs(notebook) -> list:
    return [output for cell in code_cells(notebook) for output in cell.outputs]


def output_problems(notebook) -> list[str]:
    """Error outputs, and stderr streams with TensorFlow's start-up lines."""
    problems = [f"{o.ename}: {o.evalue}" for o in outputs(notebook) if o.output_type == "error"]
    for output in outputs(notebook):
        if output.output_type == "stream" and output.name == "stderr":
            problems += [f"stderr: {line}" for line in output.text.splitlines()
                         if TENSORFLOW_NOISE.search(line)]  # fmt: skip
    return problems


def test_every_tutorial_notebook_is_there():
    assert [path.stem for path in NOTEBOOKS] == EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_committed_notebook_has_its_full_mode_outputs(path: Path):
    assert path.stat().st_size < MAX_BYTES, f"{path.name} is {path.stat().st_size} bytes"
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert notebook.nbformat == 4
    cells = code_cells(notebook)
    assert cells
    # Run top to bottom, in one go (tools/run_notebooks.py), in full mode.
    counts = [cell.execution_count for cell in cells]
    assert counts == list(range(1, len(cells) + 1)), f"{path.name}: execution counts {counts}"
    assert [o.get("text") for o in cells[0].outputs] == ["full mode\n"], path.name
    # Each cell that shows a figure (`plt.show()` at its top level, not in a function it
    # defines) has the picture, and so does a notebook that plots at all.
    pictures = [["image/png" in o.get("data", {}) for o in cell.outputs] for cell in cells]
    for index, cell in enumerate(cells):
        if re.search(r"^plt\.show\(\)", cell.source, re.M):
            assert any(pictures[index]), f"{path.name}: code cell {index} shows no picture"
    if any("plt.show()" in cell.source for cell in cells):
        assert any(map(any, pictures)), f"{path.name} plots but shows no picture"
    assert not output_problems(notebook), f"{path.name}: {output_problems(notebook)}"
    # No timing metadata (it changes at every run).
    assert all("execution" not in cell.metadata for cell in cells), path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_the_first_code_cell_quiets_tensorflow_and_holds_the_small_switch(path: Path):
    source = code_cells(nbformat.read(path, as_version=4))[0].source
    positions = [source.find(line) for line in QUIET_FIRST_CELL]
    assert -1 not in positions, (
        f"{path.name}: {dict(zip(QUIET_FIRST_CELL, positions, strict=True))}"
    )
    assert positions == sorted(positions), f"{path.name}: quiet import out of order"
    before = source[: positions[2]]
    assert not re.search(r"^\s*(import|from) (keras|tensorflow)\b", before, re.M), path.name


@pytest.mark.slow  # a kernel trains a model: about 30 s a notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_runs_in_small_mode(path: Path, tmp_path: Path, monkeypatch):
    # The kernel inherits this process's environment.
    monkeypatch.setenv("KERAS_ATTENTION_NOTEBOOK_SMALL", "1")
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)  # the notebook sets it
    monkeypatch.delenv("KERAS_ATTENTION_QUIET", raising=False)
    # This checkout's package, not another one an editable install points at.
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    )
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
    assert not output_problems(notebook), f"{path.name}: {output_problems(notebook)}"
    assert os.listdir(tmp_path), "the notebook wrote its files elsewhere than its folder"
