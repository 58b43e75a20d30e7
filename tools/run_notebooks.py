"""Runs the tutorial notebooks in full mode and writes them back with their outputs.

    python tools/run_notebooks.py                        # all of notebooks/*.ipynb
    python tools/run_notebooks.py 02_attention 03        # some, by name or number
    python tools/run_notebooks.py --timeout 7200 01_quickstart

The committed notebooks carry the outputs of a full-mode run (`KERAS_ATTENTION_NOTEBOOK_SMALL`
unset, whatever this process's environment says), so that GitHub and the documentation show
their figures; CI still executes them, in small mode, without writing them
(`tests/system/test_notebooks.py`). Each notebook runs with `nbclient` in a kernel of its own
whose working directory is a temporary folder (its `runs/...` never lands in the repository),
and that imports this checkout's `keras_attention` (the repository root goes first on the
kernel's `PYTHONPATH`). A notebook that runs to its end is written back in place, with its
outputs and execution counts, and without what changes from one run to the next besides the
outputs themselves: the cells' execution times and the kernel's version details (the
notebook's and each cell's metadata stay as they were). A failing cell stops the tool, with
one line naming the notebook and the cell, and leaves that notebook as it was.

Prints one line a notebook: its name, its run time and its size. Errors are one line,
`error: ...`; an unknown name exits with status 2 before anything runs. Developers only: it
needs nbclient, nbformat and ipykernel (the `dev` extra). Slow: every notebook trains a model
(measured on 2 CPU cores beside a benchmark, under `nice -n 19`: 01 9.2 min, 02 4.5 min,
03 2.8 min, 04 5.5 min, 05 0.2 min; about 22 minutes for the five).
"""

import argparse
import copy
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import NoReturn

import nbclient
import nbformat

from keras_attention_cli.arguments import int_at_least
from keras_attention_cli.errors import fail

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
# The notebooks' own switch (their first code cell): "1" shrinks data, models and epochs.
SMALL_VARIABLE = "KERAS_ATTENTION_NOTEBOOK_SMALL"
CELL_TIMEOUT_S = 3600
# A notebook that fails (a user error, such as an unknown name, exits with 2).
EXIT_FAILED = 1


def failed(message: str) -> NoReturn:
    """Prints `error: message` on one line to stderr and exits with `EXIT_FAILED`."""
    print(f"error: {' '.join(message.split())}", file=sys.stderr)
    sys.exit(EXIT_FAILED)


class ArgumentParser(argparse.ArgumentParser):
    """An argument error is one line, `error: ...`, exit status 2."""

    def error(self, message: str) -> NoReturn:
        fail(message)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = ArgumentParser(
        prog="tools/run_notebooks.py",
        description="Run the tutorial notebooks in full mode and write them back with outputs.",
    )
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="notebooks to run, as 02_attention, 02_attention.ipynb or 02 (default: all)",
    )
    parser.add_argument(
        "--notebook-dir",
        type=Path,
        default=NOTEBOOK_DIR,
        help="the folder of the notebooks (default: the repository's notebooks/)",
    )
    parser.add_argument(
        "--timeout",
        type=int_at_least(1),
        default=CELL_TIMEOUT_S,
        help=f"seconds a cell may run (default: {CELL_TIMEOUT_S})",
    )
    return parser.parse_args(argv)


def select_notebooks(notebook_dir: Path, names: list[str]) -> list[Path]:
    """The notebooks that `names` name (all of `notebook_dir`'s when none), in their order.

    A name is a notebook's stem (`02_attention`), its file name or its number (`02`, the
    part before the first `_`).

    Raises:
        ValueError: for a missing folder, an empty one or a name that matches no notebook
            (naming the notebooks there).
    """
    if not notebook_dir.is_dir():
        raise ValueError(f"--notebook-dir: no folder {notebook_dir}")
    available = sorted(notebook_dir.glob("*.ipynb"))
    if not available:
        raise ValueError(f"--notebook-dir: no .ipynb file in {notebook_dir}")
    chosen = []
    for name in names:
        stem = name.removesuffix(".ipynb")
        matches = [p for p in available if stem in (p.stem, p.stem.split("_", 1)[0])]
        if len(matches) != 1:
            known = ", ".join(p.stem for p in available)
            raise ValueError(f"unknown notebook {name!r}; choose from {known}")
        if matches[0] not in chosen:
            chosen.append(matches[0])
    return sorted(chosen) if chosen else available


def kernel_environment() -> dict[str, str]:
    """This process's environment for the kernel: full mode, and this checkout's package
    before any installed one."""
    env = dict(os.environ)
    env.pop(SMALL_VARIABLE, None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def execute(path: Path, timeout: int) -> nbformat.NotebookNode:
    """Runs the notebook at `path` in a fresh kernel in a temporary folder; returns it with
    its outputs, its and its cells' metadata as they were (`strip_volatile`).

    Raises:
        nbclient.exceptions.CellExecutionError: the first failing cell.
    """
    notebook = nbformat.read(path, as_version=4)
    original = copy.deepcopy(notebook)
    with tempfile.TemporaryDirectory(prefix=f"{path.stem}-") as work_dir:
        client = nbclient.NotebookClient(
            notebook,
            timeout=timeout,
            kernel_name=notebook.metadata.get("kernelspec", {}).get("name", "python3"),
            record_timing=False,  # no start/end times in the cells' metadata
            resources={"metadata": {"path": work_dir}},  # the kernel's working directory
        )
        client.execute(env=kernel_environment())
    return strip_volatile(notebook, original)


def strip_volatile(
    notebook: nbformat.NotebookNode, original: nbformat.NotebookNode
) -> nbformat.NotebookNode:
    """`notebook` with the notebook-level and cell metadata of `original` (the same
    notebook before it ran): what a run adds there (the kernel's language version, execution
    times, widget state) changes from one run to the next."""
    notebook.metadata = copy.deepcopy(original.metadata)
    for cell, before in zip(notebook.cells, original.cells, strict=True):
        cell.metadata = copy.deepcopy(before.metadata)
    return notebook


def write_notebook(notebook: nbformat.NotebookNode, path: Path) -> None:
    """Writes `notebook` to `path` as the repository's notebooks are written (nbformat's
    layout and a final newline), through a temporary file, so that a kill leaves the old
    file whole."""
    nbformat.validate(notebook)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(nbformat.writes(notebook) + "\n", encoding="utf-8")
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        paths = select_notebooks(args.notebook_dir, args.names)
    except ValueError as error:
        fail(str(error))
    for path in paths:
        start = time.perf_counter()
        try:
            notebook = execute(path, args.timeout)
        except nbclient.exceptions.CellExecutionError as error:
            failed(f"{path.name} failed, left as it was: {error.ename}: {error.evalue}")
        except nbclient.exceptions.CellTimeoutError:
            failed(f"{path.name}: a cell ran past --timeout {args.timeout} s")
        write_notebook(notebook, path)
        minutes = (time.perf_counter() - start) / 60
        print(f"{path.name}: {minutes:.1f} min, {path.stat().st_size / 1024:.0f} KiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
