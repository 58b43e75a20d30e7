"""Runs the sweep: one `tools/train.py` run per (variation, seed), under one budget of updates.

Every row trains for the same number of updates (`--train-steps`), not the same wall-clock
time: the rows differ in speed (16 heads or 6 layers cost more per step), and this machine is
shared, so a time budget would measure the load as much as the change; the paper's Table 3
also trains every row for the same 100K steps. Each row's folder is a run folder of
`tools/train.py`, which resumes where it stopped: a sweep killed at any point is resumed by the
same command, and finished rows (their `bleu.json` written) are not trained again.

Example (a sweep of two rows on a generated corpus, about a minute):

>>> from tools.paper.variations import select
>>> config = SweepConfig("sweep", select(["D smoothing=0"]), train_steps=4,
...     train_args=TINY_TRAIN_ARGS, base_seeds=(1,))
>>> [result.status for result in run_sweep(config)]
['done', 'done']
"""

import contextlib
import ctypes
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from keras_attention.core.atomic_files import write_bytes_atomically
from tools.paper.no_op_rows import base_model_config, changes_nothing
from tools.paper.variations import BASE, Variation, slug

TRAIN_TOOL = Path(__file__).resolve().parents[1] / "train.py"
# A tiny model on the generated corpus: for tests and the docstring example.
TINY_TRAIN_ARGS = (
    "--train-pairs", "300", "--vocabulary-size", "120", "--max-tokens", "512",
    "--max-length", "32", "--warmup-steps", "20", "--no-jit",
    "--override", "num_encoder_layers=1", "--override", "num_decoder_layers=1",
    "--override", "d_model=16", "--override", "num_heads=2", "--override", "intermediate_dim=32",
)  # fmt: skip
SETTINGS_FILE = "sweep.json"
# In a finished row's folder: the seconds its training took (of its last start, when a killed
# row was resumed), written by the sweep once the row has finished.
TIME_FILE = "row_time.json"


def without_data_dir(words: Sequence[str]) -> list[str]:
    """`words` with the value of `--data-dir` (either spelling) replaced by `DATA_DIR`.

    >>> without_data_dir(["--dataset", "multi30k", "--data-dir", "/data/m30k", "--seed", "1"])
    ['--dataset', 'multi30k', '--data-dir', 'DATA_DIR', '--seed', '1']
    >>> without_data_dir(["--data-dir=/data/m30k"])
    ['--data-dir=DATA_DIR']
    """
    kept = list(words)
    for index, word in enumerate(kept):
        if word == "--data-dir" and index + 1 < len(kept):
            kept[index + 1] = "DATA_DIR"
        elif word.startswith("--data-dir="):
            kept[index] = "--data-dir=DATA_DIR"
    return kept


@dataclasses.dataclass(frozen=True)
class SweepConfig:
    """A sweep's settings.

    Attributes:
        work_dir: the sweep's folder: a run folder per row and seed, `logs/`, `sweep.json`.
        variations: the rows, the base first (`variations.select`).
        train_steps: updates of every row.
        train_args: the base recipe, as `tools/train.py` words (corpus, preset, ...); a
            variation's words come after them, so they win.
        base_seeds: the base row's seeds (at least 3 for a spread worth the name).
        seed: the other rows' seed (the first base seed by default).
        retry_failed: train again the rows whose earlier start failed.
    """

    work_dir: str
    variations: Sequence[Variation]
    train_steps: int
    train_args: Sequence[str] = ()
    base_seeds: Sequence[int] = (1, 2, 3)
    seed: int | None = None
    retry_failed: bool = False

    def settings(self) -> dict:
        """What every row shares: a sweep folder holds rows of one budget and recipe only.
        The corpus folder (`--data-dir`) is where this machine keeps the corpus, not part of
        the recipe: it is kept as `DATA_DIR`, so that a sweep goes on on another machine."""
        return {"train_steps": self.train_steps, "train_args": without_data_dir(self.train_args)}

    def rows(self) -> list[tuple[Variation, int]]:
        """`(variation, seed)` in training order: the base's seeds first."""
        seed = self.base_seeds[0] if self.seed is None else self.seed
        return [
            (variation, row_seed)
            for variation in self.variations
            for row_seed in (self.base_seeds if variation.name == BASE.name else (seed,))
        ]


@dataclasses.dataclass
class RowResult:
    """How a row's start ended: "done" (trained now or before), or "failed" with the last
    line its run printed on stderr."""

    variation: Variation
    seed: int
    run_dir: Path
    status: str
    error: str = ""
    seconds: float = 0.0


def row_dir(work_dir: str | os.PathLike, variation: Variation, seed: int) -> Path:
    return Path(work_dir) / slug(variation.name) / f"seed{seed}"


def failure_file(work_dir: str | os.PathLike, variation: Variation, seed: int) -> Path:
    return Path(work_dir) / "logs" / f"{slug(variation.name)}-seed{seed}.failed.json"


def is_finished(run_dir: Path) -> bool:
    """Whether `run_dir` holds a finished run (its `bleu.json` with validation scores)."""
    try:
        return "validation" in json.loads((run_dir / "bleu.json").read_text())
    except (OSError, ValueError):
        return False


def train_command(config: SweepConfig, variation: Variation, seed: int) -> list[str]:
    run_dir = row_dir(config.work_dir, variation, seed)
    return [
        sys.executable, str(TRAIN_TOOL), "--run-dir", str(run_dir),
        "--train-steps", str(config.train_steps), "--seed", str(seed), "--no-export",
        *config.train_args, *variation.command_words(),
    ]  # fmt: skip


def saved_settings(work_dir: str | os.PathLike) -> dict | None:
    """The settings of the sweep in `work_dir` (`sweep.json`), `None` if it holds none.

    Raises:
        ValueError: if `sweep.json` is not JSON.
    """
    path = Path(work_dir) / SETTINGS_FILE
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except ValueError as error:
        raise ValueError(f"{path} is not JSON ({error}); it holds the sweep's settings") from None


def check_settings(config: SweepConfig) -> None:
    """Writes `sweep.json` in a new sweep folder; in an existing one, checks it holds rows of
    the same budget and recipe.

    Raises:
        ValueError: naming what differs from the folder's settings.
    """
    saved = saved_settings(config.work_dir)
    if saved is not None:
        for name, value in config.settings().items():
            if saved.get(name) != value:
                raise ValueError(
                    f"{config.work_dir} holds a sweep with {name}={saved.get(name)!r}, not "
                    f"{value!r}: use another --work-dir, or the folder's settings"
                )
        return
    path = Path(config.work_dir) / SETTINGS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(config.settings(), indent=2) + "\n")
    os.replace(temporary, path)


def _die_with_parent() -> None:
    """In the child: ends it when the sweep's process ends (even by SIGKILL), so that a
    resumed sweep never finds its last row still running (Linux; elsewhere a no-op)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def train_row(config: SweepConfig, variation: Variation, seed: int) -> RowResult:
    """Trains one row (or resumes it), its output in `logs/`."""
    run_dir = row_dir(config.work_dir, variation, seed)
    logs = Path(config.work_dir) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"{slug(variation.name)}-seed{seed}.log"
    # A row that an earlier sweep had started (its folder has its settings) resumes: its time
    # is then only this part's, and says so.
    resumed = (run_dir / "config.json").exists()
    start = time.monotonic()
    with log_path.open("a", encoding="utf-8") as log:
        done = subprocess.run(
            train_command(config, variation, seed), stdout=log, stderr=subprocess.PIPE,
            text=True, check=False, preexec_fn=_die_with_parent,
        )  # fmt: skip
        log.write(done.stderr)
    seconds = time.monotonic() - start
    if done.returncode == 0 and is_finished(run_dir):
        failure_file(config.work_dir, variation, seed).unlink(missing_ok=True)
        timing = {"seconds": seconds, "resumed": resumed}
        write_bytes_atomically(run_dir / TIME_FILE, json.dumps(timing).encode())
        return RowResult(variation, seed, run_dir, "done", seconds=seconds)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    error = lines[-1] if lines else f"exit status {done.returncode}"
    failure = {"returncode": done.returncode, "error": error, "log": str(log_path)}
    _record_failure(config, variation, seed, failure)
    return RowResult(variation, seed, run_dir, "failed", error=error, seconds=seconds)


def _record_failure(config: SweepConfig, variation: Variation, seed: int, failure: dict) -> None:
    """Writes the row's failure record (`failure_file`), which a later sweep reads."""
    path = failure_file(config.work_dir, variation, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(failure, indent=2))


def _base_config(results: Sequence[RowResult]) -> dict | None:
    """The model arguments of the first finished base row among `results`, if any."""
    base = next((r for r in results if r.variation.name == BASE.name and r.status == "done"), None)
    return None if base is None else base_model_config(base.run_dir)


def run_sweep(
    config: SweepConfig, progress: Callable[[str], None] | None = None
) -> list[RowResult]:
    """Trains every row not yet finished, in order; a failed row is recorded and the sweep
    goes on, and so is a row that would change nothing in the base (`no_op_rows`), without
    training it. Returns each row's result.

    Raises:
        ValueError: if the work folder holds a sweep of another budget or recipe.
    """
    check_settings(config)
    rows = config.rows()
    results = []
    for index, (variation, seed) in enumerate(rows, start=1):
        run_dir = row_dir(config.work_dir, variation, seed)
        failure = failure_file(config.work_dir, variation, seed)
        label = f"[{index}/{len(rows)}] {variation.name}, seed {seed}"
        if is_finished(run_dir):
            results.append(RowResult(variation, seed, run_dir, "done"))
            continue
        if failure.exists() and not config.retry_failed:
            error = json.loads(failure.read_text()).get("error", "")
            results.append(RowResult(variation, seed, run_dir, "failed", error=error))
            if progress:
                progress(f"{label}: failed before ({error}); --retry-failed trains it again")
            continue
        no_op = None
        if variation.name != BASE.name:
            no_op = changes_nothing(variation, _base_config(results))
        if no_op:
            _record_failure(config, variation, seed, {"returncode": None, "error": no_op})
            results.append(RowResult(variation, seed, run_dir, "failed", error=no_op))
            if progress:
                progress(f"{label}: not trained, {no_op}")
            continue
        if progress:
            progress(f"{label}: training")
        result = train_row(config, variation, seed)
        if progress:
            ending = "done" if result.status == "done" else f"failed: {result.error}"
            progress(f"{label}: {ending} in {result.seconds / 60:.1f} min")
        results.append(result)
    return results


def collect_results(config: SweepConfig) -> list[RowResult]:
    """Each row's state without training: "done", "failed" (its recorded error), or
    "missing" (not trained yet, or stopped before it finished)."""
    results = []
    for variation, seed in config.rows():
        run_dir = row_dir(config.work_dir, variation, seed)
        failure = failure_file(config.work_dir, variation, seed)
        if is_finished(run_dir):
            results.append(RowResult(variation, seed, run_dir, "done"))
        elif failure.exists():
            error = json.loads(failure.read_text()).get("error", "")
            results.append(RowResult(variation, seed, run_dir, "failed", error=error))
        else:
            results.append(RowResult(variation, seed, run_dir, "missing"))
    return results
