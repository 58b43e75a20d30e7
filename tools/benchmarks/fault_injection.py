"""Fault injection: SIGKILL a tiny `tools/train.py` run at named points, start the same command
again, and check that the run folder is whole and the weights are those of a run never killed.

A point is one or more kills of the same run folder, one per start, then a start that must
complete. Each kill is either a `KERAS_ATTENTION_FAULT` value (the process kills itself at a
named point, see `keras_attention.core.atomic_files.fault_point`: `write:<file>`, `step`,
`backup`, `epoch_end`, `export`), `watch:<glob>` (this process kills it once a path
matching the glob appears in the run folder), or `full:<POINT:N>[@BYTES]` (the disk fills up
at that point, `KERAS_ATTENTION_DISK_FULL`: every later write fails, or, with `@BYTES`, every
file larger than BYTES fails half-written; the start must then end by itself with one
`error:` line naming the file and the cause, a non-zero status and no traceback or crash).
After the completing start, every file of the folder must load (`check_run_folder`), and
its last checkpoint and `model.keras` must hold the weights of an uninterrupted run made
first; two uninterrupted runs measure the run-to-run nondeterminism, which the difference
may not exceed (by more than `FaultConfig.tolerance`).

`FAST_POINTS` is the short check of `faults --fast` (the CI's check,
tests/system/test_fault_injection.py, chains such kills and a full disk in one folder trained
by steps); `LONG_POINTS` (25 kill points and the 7 `DISK_FULL_POINTS`) runs from
`python tools/benchmark.py faults`.
"""

import csv
import dataclasses
import fnmatch
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

from keras_attention.core.atomic_files import (
    DISK_FULL_BYTES_VARIABLE,
    DISK_FULL_VARIABLE,
    FAULT_VARIABLE,
)

TRAIN_SCRIPT = Path(__file__).resolve().parents[1] / "train.py"
WATCH = "watch:"
FULL = "full:"
# A tiny run of the generated corpus: 3 epochs of 9 batches, backups every 4 steps.
TINY_ARGUMENTS = (
    "--train-pairs", "300", "--vocabulary-size", "120", "--max-tokens", "512",
    "--max-length", "32", "--warmup-steps", "20", "--no-jit",
    "--override", "num_encoder_layers=1", "--override", "num_decoder_layers=1",
    "--override", "d_model=16", "--override", "num_heads=2", "--override", "intermediate_dim=32",
    "--validation-bleu-sentences", "20", "--beam-size", "1", "--backup-every-steps", "4",
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class FaultPoint:
    """Kills of one run folder, one per start, before a start that must complete.

    Attributes:
        name: what is interrupted, for the report.
        kills: per killed start, a `KERAS_ATTENTION_FAULT` value (`POINT:N`),
            `watch:<glob>` (a path under the run folder) or `full:POINT:N[@BYTES]` (the
            disk fills up there).
    """

    name: str
    kills: tuple[str, ...]


# `--fast`'s: two kills of one folder: the checkpoint of epoch 1 half-written (the start resumes
# from the step backup of epoch 0 and writes it again), then the end of epoch 2 with its log
# row written but not its backup (the row must not be written twice).
FAST_POINTS = (
    FaultPoint(
        "epoch-1 checkpoint write, then epoch-2 log row before its backup",
        ("write:epoch_001.weights.h5:1", "epoch_end:2"),
    ),
)
# The disk fills up: every later write fails (`@BYTES`: files grow to BYTES bytes, then fail
# half-written; the tiny run's weights files are about 230 KB, its tokenizer 240 KB).
DISK_FULL_POINTS = (
    FaultPoint("disk full mid epoch 1: a step backup half-written", ("full:step:5@100000",)),
    FaultPoint("disk full at epoch 1's end: its backup", ("full:epoch_end:1",)),
    FaultPoint("disk full after the config: the tokenizer", ("full:write:config.json:1",)),
    FaultPoint("disk full at epoch 1's checkpoint", ("full:write:validation_bleu.json:1",)),
    FaultPoint("disk full at the choice of weights", ("full:write:bleu.json:1",)),
    FaultPoint("disk full writing model.keras", ("full:write:test_metrics.json:1@100000",)),
    FaultPoint("disk full at the export", ("full:write:model.keras:1",)),
)
# 3 epochs of 9 batches, backups after steps 4 and 8 and at each epoch end (3 per epoch).
LONG_POINTS = (
    FaultPoint("config.json write", ("write:config.json:1",)),
    FaultPoint("first batch, before any backup", ("step:1",)),
    FaultPoint("mid epoch 1, after a step backup", ("step:6",)),
    FaultPoint("first step backup, between its two renames", ("backup:1",)),
    FaultPoint("second step backup, between its two renames", ("backup:2",)),
    FaultPoint("best weights write, epoch 1", ("write:best.weights.h5:1",)),
    FaultPoint("validation state write, epoch 1", ("write:validation_bleu.json:1",)),
    FaultPoint("checkpoint write, epoch 1", ("write:epoch_001.weights.h5:1",)),
    FaultPoint("epoch 1 logged, not backed up", ("epoch_end:1",)),
    FaultPoint("epoch-end backup of epoch 1, between its renames", ("backup:3",)),
    FaultPoint("mid epoch 2", ("step:13",)),
    FaultPoint("checkpoint write, epoch 2", ("write:epoch_002.weights.h5:1",)),
    FaultPoint("epoch 2 logged, not backed up", ("epoch_end:2",)),
    FaultPoint("checkpoint write, last epoch", ("write:epoch_003.weights.h5:1",)),
    FaultPoint("last epoch logged, not backed up", ("epoch_end:3",)),
    FaultPoint("last epoch-end backup, between its renames", ("backup:9",)),
    FaultPoint("bleu.json write (choice of weights)", ("write:bleu.json:1",)),
    FaultPoint("test_metrics.json write", ("write:test_metrics.json:1",)),
    FaultPoint("model.keras write", ("write:model.keras:1",)),
    FaultPoint("export written, bleu.json not updated", ("export:1",)),
    FaultPoint("bleu.json update after the export", ("write:bleu.json:2",)),
    FaultPoint("SavedModel half-written (watched)", ("watch:export/.1-*/model",)),
    FaultPoint("training log appears (watched)", ("watch:training_log.csv",)),
    FaultPoint(
        "three kills: mid epoch 1, checkpoint of epoch 2, last log row",
        # (each start counts its own points: the third's second epoch end is the last one)
        ("step:6", "write:epoch_002.weights.h5:1", "epoch_end:2"),
    ),
    FaultPoint(
        "two kills: model.keras write, then the export", ("write:model.keras:1", "export:1")
    ),
    *DISK_FULL_POINTS,
)


@dataclasses.dataclass
class FaultConfig:
    """Settings of a fault-injection run.

    Attributes:
        points: the points to try.
        work_dir: where the run folders go (`None`: a temporary folder, removed).
        epochs: epochs of the tiny run (with `round_steps`, its rounds).
        round_steps: train by steps instead, `epochs` rounds of this many
            (`--train-steps epochs * round_steps --save-every-steps round_steps`).
        export: export the SavedModel (`--export`), so that its points can be tried.
        extra_arguments: more `tools/train.py` arguments (after `TINY_ARGUMENTS`).
        references: uninterrupted runs (>= 2 measures the nondeterminism).
        tolerance: allowed weight difference beyond the measured nondeterminism.
        timeout: seconds a start may take.
    """

    points: tuple[FaultPoint, ...] = LONG_POINTS
    work_dir: str | None = None
    epochs: int = 3
    round_steps: int | None = None
    export: bool = True
    extra_arguments: tuple[str, ...] = ()
    references: int = 2
    tolerance: float = 1e-6
    timeout: float = 900.0


@dataclasses.dataclass
class PointResult:
    """What happened at one point.

    Attributes:
        point: the point.
        killed: per kill, whether the start died of it (`False`: it ended first).
        completed: whether the completing start exited with status 0.
        problems: what is wrong in the run folder afterwards (empty: nothing).
        difference: the largest weight difference from the first uninterrupted run.
        seconds: wall-clock time of the point.
        output: the end of the completing start's output, when it failed.
    """

    point: FaultPoint
    killed: list[bool]
    completed: bool
    problems: list[str]
    difference: float | None
    seconds: float
    output: str = ""

    def survived(self, tolerance: float) -> bool:
        """Every kill happened, the run then completed, its folder is whole and its weights
        are within `tolerance` of the uninterrupted run's."""
        return (
            all(self.killed)
            and self.completed
            and not self.problems
            and self.difference is not None
            and self.difference <= tolerance
        )


@dataclasses.dataclass
class FaultReport:
    """The results of `run_fault_injection`.

    Attributes:
        results: one per point.
        nondeterminism: the largest weight difference between the uninterrupted runs.
        tolerance: the difference a point may show (`nondeterminism` + the configured
            tolerance).
        reference_problems: what is wrong in the uninterrupted runs' folders.
        seconds: wall-clock time of the whole run.
    """

    results: list[PointResult]
    nondeterminism: float
    tolerance: float
    reference_problems: list[str]
    seconds: float

    @property
    def tried(self) -> int:
        return len(self.results)

    @property
    def survived(self) -> int:
        return sum(result.survived(self.tolerance) for result in self.results)

    def as_dict(self) -> dict:
        return {
            "tried": self.tried,
            "survived": self.survived,
            "nondeterminism": self.nondeterminism,
            "tolerance": self.tolerance,
            "largest_difference": max(
                (r.difference for r in self.results if r.difference is not None), default=None
            ),
            "reference_problems": self.reference_problems,
            "seconds": self.seconds,
            "points": [
                {
                    "name": r.point.name,
                    "kills": list(r.point.kills),
                    "killed": r.killed,
                    "completed": r.completed,
                    "problems": r.problems,
                    "difference": r.difference,
                    "survived": r.survived(self.tolerance),
                    "seconds": r.seconds,
                }
                for r in self.results
            ],
        }


def train_command(config: FaultConfig, output_dir: Path) -> list[str]:
    """The `tools/train.py` command of the tiny run in `output_dir`."""
    length = ["--epochs", str(config.epochs)]
    if config.round_steps is not None:
        length = ["--train-steps", str(config.epochs * config.round_steps),
                  "--save-every-steps", str(config.round_steps)]  # fmt: skip
    return [
        sys.executable, str(TRAIN_SCRIPT), "--run-dir", str(output_dir), *length,
        *TINY_ARGUMENTS, "--export" if config.export else "--no-export", *config.extra_arguments,
    ]  # fmt: skip


def _environment(fault: str | None, disk_full: str | None = None) -> dict[str, str]:
    """This process's environment with `fault` (a kill point) or `disk_full`
    (`POINT:N[@BYTES]`) set, and any inherited fault variable removed."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": "tensorflow"}
    for name in (FAULT_VARIABLE, DISK_FULL_VARIABLE, DISK_FULL_BYTES_VARIABLE):
        env.pop(name, None)
    if fault is not None:
        env[FAULT_VARIABLE] = fault
    if disk_full is not None:
        point, _, size = disk_full.partition("@")
        env[DISK_FULL_VARIABLE] = point
        if size:
            env[DISK_FULL_BYTES_VARIABLE] = size
    return env


def failed_cleanly(done: subprocess.CompletedProcess) -> bool:
    """Whether a start that met a fault it cannot survive ended as a tool should: by itself
    (no signal, no crash), with a non-zero status, no traceback and exactly one `error:`
    line that names a storage cause."""
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    return (
        done.returncode > 0
        and "Traceback" not in done.stderr
        and "Fatal Python error" not in done.stderr
        and len(errors) == 1
        and "errno" in errors[0]
    )


def run_to_completion(command: list[str], timeout: float) -> subprocess.CompletedProcess:
    """Runs `command` (no fault) and returns it; its output is kept."""
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env=_environment(None),
        check=False,
    )  # fmt: skip


def run_killed(command: list[str], kill: str, output_dir: Path, timeout: float) -> bool:
    """Runs `command` with kill `kill` (see `FaultPoint`); returns whether it was killed
    (`False`: it ended by itself first); for a full disk, whether it `failed_cleanly`."""
    if kill.startswith(FULL):
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, check=False,
            env=_environment(None, kill[len(FULL) :]),
        )  # fmt: skip
        return failed_cleanly(done)
    watch = kill[len(WATCH) :] if kill.startswith(WATCH) else None
    process = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_environment(None if watch else kill),
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + timeout
        while process.poll() is None:
            if watch is not None and _appeared(output_dir, watch):
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=60)
                return True
            if time.monotonic() > deadline:
                raise TimeoutError(f"{command} ran for more than {timeout} s")
            time.sleep(0.01 if watch else 0.2)
        return process.returncode == -signal.SIGKILL and watch is None
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)


def _appeared(folder: Path, pattern: str) -> bool:
    """Whether a path matching `pattern` (a glob relative to `folder`, `*` matching dots
    too) exists."""
    parts = pattern.split("/")
    paths = [folder]
    for part in parts:
        found = []
        for path in paths:
            try:
                found += [p for p in path.iterdir() if fnmatch.fnmatchcase(p.name, part)]
            except OSError:
                continue
        paths = found
    return bool(paths)


# Checks of a finished run folder.


def weights_file_arrays(source) -> dict[str, np.ndarray]:
    """Every array of a `.weights.h5` file (a path or a file object), by its HDF5 path."""
    import h5py

    arrays = {}
    with h5py.File(source, "r") as file:
        file.visititems(
            lambda name, item: (
                arrays.__setitem__(name, item[()]) if isinstance(item, h5py.Dataset) else None
            )
        )
    return arrays


def model_file_arrays(path: Path) -> dict[str, np.ndarray]:
    """Every array of the weights in a `.keras` file."""
    with zipfile.ZipFile(path) as archive:
        return weights_file_arrays(io.BytesIO(archive.read("model.weights.h5")))


def largest_difference(first: dict[str, np.ndarray], second: dict[str, np.ndarray]) -> float:
    """The largest absolute difference between two sets of arrays (`inf` if they do not
    match in names or shapes)."""
    if first.keys() != second.keys():
        return float("inf")
    largest = 0.0
    for name, array in first.items():
        other = second[name]
        if array.shape != other.shape:
            return float("inf")
        if array.size and np.issubdtype(array.dtype, np.number):
            delta = np.abs(array.astype(np.float64) - other.astype(np.float64))
            largest = max(largest, float(delta.max()))
    return largest


def final_weights(output_dir: Path, epochs: int) -> dict[str, dict[str, np.ndarray]]:
    """The weights a run ended with: its last checkpoint and those of `model.keras`."""
    return {
        "last checkpoint": weights_file_arrays(
            output_dir / "checkpoints" / f"epoch_{epochs:03d}.weights.h5"
        ),
        "model.keras": model_file_arrays(output_dir / "model.keras"),
    }


def _read_json(path: Path, problems: list[str]):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        problems.append(f"{path.name} does not load: {error}")
        return None


def _check_log(path: Path, epochs: int, problems: list[str]) -> None:
    try:
        text = path.read_text()
    except OSError as error:
        problems.append(f"training_log.csv does not load: {error}")
        return
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or not text.endswith("\n"):
        problems.append("training_log.csv is empty or its last row is cut")
        return
    header, body = rows[0], rows[1:]
    if any(len(row) != len(header) for row in body):
        problems.append("training_log.csv has rows of the wrong length")
    logged = [row[header.index("epoch")] for row in body] if "epoch" in header else []
    if logged != [str(epoch) for epoch in range(epochs)]:
        problems.append(f"training_log.csv logs epochs {logged}; expected 0..{epochs - 1} once")


def _check_events(logs_dir: Path, epochs: int, problems: list[str]) -> None:
    """TensorBoard's `epoch_loss` must be logged once per epoch in `train/` and `validation/`."""
    import tensorflow as tf

    for name in ("train", "validation"):
        steps = []
        try:
            for path in sorted((logs_dir / name).glob("events.out.tfevents.*")):
                for record in tf.data.TFRecordDataset(str(path)):
                    event = tf.compat.v1.Event.FromString(record.numpy())
                    if any(value.tag == "epoch_loss" for value in event.summary.value):
                        steps.append(event.step)
        except (OSError, tf.errors.OpError) as error:
            problems.append(f"logs/{name} does not load: {error}")
            continue
        if sorted(steps) != list(range(epochs)):
            problems.append(f"logs/{name} logs epochs {steps}; expected 0..{epochs - 1} once")


def check_run_folder(output_dir: Path, epochs: int, export: bool) -> list[str]:
    """What is wrong with a finished run folder of `tools/train.py` (empty: nothing).

    Every file must load: the JSON files parse, the CSV log and TensorBoard's logs hold one
    complete row (point) per epoch, the checkpoints and `best.weights.h5` load (the best is
    its epoch's checkpoint), `model.keras` loads with Keras, the export with TensorFlow and
    translates; no backup, no temporary file is left.
    """
    import keras

    import keras_attention.models  # registers the classes that load_model reads
    import keras_attention.training  # noqa: F401 (the loss, metrics and schedule too)

    problems = []
    expected = {
        "config.json", "corpus.json", "data", "tokenizer.model", "tokenizer.json",
        "checkpoints", "logs", "training_log.csv",
        "validation_bleu.json", "bleu.json", "test_metrics.json", "learning_curve.png",
        "model.keras",
    } | ({"export"} if export else set())  # fmt: skip
    present = {path.name for path in output_dir.iterdir()}
    if present != expected:
        problems.append(
            f"unexpected files {sorted(present - expected)}, missing {sorted(expected - present)}"
        )
    for path in output_dir.rglob(".*"):
        problems.append(f"temporary file left: {path.relative_to(output_dir)}")
    for name in ("config.json", "corpus.json", "tokenizer.json", "test_metrics.json"):
        _read_json(output_dir / name, problems)
    try:
        from keras_attention.data.tokenizer import SubwordTokenizer

        SubwordTokenizer.load(output_dir / "tokenizer.model")
    except (OSError, ValueError) as error:
        problems.append(f"tokenizer.model does not load: {error}")
    _check_log(output_dir / "training_log.csv", epochs, problems)
    _check_events(output_dir / "logs", epochs, problems)
    state = _read_json(output_dir / "validation_bleu.json", problems) or {}
    scored = sorted(int(epoch) for epoch in state.get("scores", {}))
    if scored != list(range(1, epochs + 1)):
        problems.append(f"validation_bleu.json scores epochs {scored}; expected 1..{epochs}")
    checkpoints = output_dir / "checkpoints"
    names = sorted(path.name for path in checkpoints.iterdir()) if checkpoints.is_dir() else []
    wanted = sorted([f"epoch_{e:03d}.weights.h5" for e in range(1, epochs + 1)])
    if names != sorted([*wanted, "best.weights.h5"]):
        problems.append(f"checkpoints/ holds {names}")
    loaded = {}
    for name in names:
        try:
            loaded[name] = weights_file_arrays(checkpoints / name)
        except (OSError, ValueError) as error:
            problems.append(f"checkpoints/{name} does not load: {error}")
    best = state.get("best_epoch")
    best_name = f"epoch_{best:03d}.weights.h5" if isinstance(best, int) else None
    best_file = loaded.get("best.weights.h5")
    comparable = best_name in loaded and best_file is not None
    if comparable and largest_difference(loaded[best_name], best_file) != 0.0:
        problems.append(f"best.weights.h5 is not epoch {best}'s checkpoint")
    record = _read_json(output_dir / "bleu.json", problems) or {}
    if "model" not in record or record.get("model") not in record.get("validation", {}):
        problems.append("bleu.json lacks the choice of weights")
    try:
        keras.models.load_model(output_dir / "model.keras")
    except Exception as error:  # any failure to load is the finding
        problems.append(f"model.keras does not load: {type(error).__name__}: {error}")
    try:
        from PIL import Image

        with Image.open(output_dir / "learning_curve.png") as image:
            image.verify()
    except Exception as error:
        problems.append(f"learning_curve.png does not load: {error}")
    if export:
        problems += _check_export(output_dir, record)
    return problems


def _check_export(output_dir: Path, record: dict) -> list[str]:
    import tensorflow as tf

    from keras_attention.serving.export import load_exported

    problems = []
    versions = sorted(path.name for path in (output_dir / "export").iterdir())
    if versions != ["1"]:
        problems.append(f"export/ holds {versions}; expected one version, 1")
    if not str(record.get("exported", "")).endswith("export/1") or "test" not in record:
        problems.append("bleu.json does not record the export and its test scores")
    try:
        serve = load_exported(output_dir / "export" / "1")
        translations = serve(sentences=tf.constant(["the cat sees the dog ."]))["translations"]
        if translations.shape != (1,):
            problems.append(f"the export translates to shape {translations.shape}")
    except Exception as error:
        problems.append(f"export/1 does not load or translate: {type(error).__name__}: {error}")
    return problems


def _relevant_config(output_dir: Path) -> dict:
    config = json.loads((output_dir / "config.json").read_text())
    config.pop("output_dir", None)
    return config


def run_point(
    point: FaultPoint, config: FaultConfig, output_dir: Path, reference: Path
) -> PointResult:
    """Kills a run in `output_dir` as `point` says, completes it, checks it against the
    uninterrupted run in `reference`."""
    started = time.monotonic()
    command = train_command(config, output_dir)
    killed = [run_killed(command, kill, output_dir, config.timeout) for kill in point.kills]
    done = run_to_completion(command, config.timeout)
    problems, difference, output = [], None, ""
    if done.returncode != 0:
        output = (done.stdout + done.stderr)[-3000:]
        problems.append(f"the completing start exited with status {done.returncode}")
    else:
        problems = check_run_folder(output_dir, config.epochs, config.export)
        if _relevant_config(output_dir) != _relevant_config(reference):
            problems.append("config.json differs from the uninterrupted run's")
        if (output_dir / "tokenizer.model").read_bytes() != (
            reference / "tokenizer.model"
        ).read_bytes():
            problems.append("tokenizer.model differs from the uninterrupted run's")
        try:
            ours = final_weights(output_dir, config.epochs)
            theirs = final_weights(reference, config.epochs)
            difference = max(largest_difference(ours[k], theirs[k]) for k in ours)
        except (OSError, KeyError, ValueError) as error:
            problems.append(f"the final weights do not load: {error}")
    return PointResult(
        point, killed, done.returncode == 0, problems, difference, time.monotonic() - started,
        output,
    )  # fmt: skip


def run_fault_injection(config: FaultConfig, progress=print) -> FaultReport:
    """Makes `config.references` uninterrupted runs, then tries every point of `config`.

    Args:
        config: the settings.
        progress: called with a line of text after each run (`None`: silent).

    Returns:
        A `FaultReport`.
    """
    started = time.monotonic()
    progress = progress or (lambda _: None)
    with tempfile.TemporaryDirectory(prefix="keras-attention-faults-") as scratch:
        work_dir = Path(config.work_dir or scratch)
        work_dir.mkdir(parents=True, exist_ok=True)
        references, reference_problems = [], []
        for index in range(config.references):
            folder = work_dir / f"reference_{index}"
            done = run_to_completion(train_command(config, folder), config.timeout)
            if done.returncode != 0:
                raise RuntimeError(
                    f"the uninterrupted run failed:\n{(done.stdout + done.stderr)[-3000:]}"
                )
            for problem in check_run_folder(folder, config.epochs, config.export):
                reference_problems.append(f"reference_{index}: {problem}")
            references.append(final_weights(folder, config.epochs))
            progress(f"uninterrupted run {index + 1}/{config.references}: done")
        nondeterminism = max(
            (
                largest_difference(references[0][k], other[k])
                for other in references[1:]
                for k in other
            ),
            default=0.0,
        )
        tolerance = nondeterminism + config.tolerance
        results = []
        for index, point in enumerate(config.points):
            folder = work_dir / f"point_{index:02d}_{_slug(point.name)}"
            result = run_point(point, config, folder, work_dir / "reference_0")
            results.append(result)
            verdict = "survived" if result.survived(tolerance) else "FAILED"
            found = "".join(f"; {problem}" for problem in result.problems)
            progress(
                f"point {index + 1}/{len(config.points)} {point.name} {list(point.kills)}: "
                f"{verdict} (killed {result.killed}, difference {result.difference}, "
                f"{result.seconds:.0f} s){found}"
            )
    return FaultReport(
        results, nondeterminism, tolerance, reference_problems, time.monotonic() - started
    )


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:40]


def format_report(report: FaultReport) -> str:
    """The report as text: one line per point, then the totals."""
    lines = []
    for result in report.results:
        verdict = "survived" if result.survived(report.tolerance) else "FAILED  "
        difference = "-" if result.difference is None else f"{result.difference:.3g}"
        lines.append(f"{verdict} {result.point.name} (difference {difference})")
        lines += [f"    {problem}" for problem in result.problems]
        if not all(result.killed):
            lines.append(f"    not killed where asked: {result.killed}")
    largest = max((r.difference for r in report.results if r.difference is not None), default=None)
    lines += [
        f"points tried: {report.tried}, survived: {report.survived}",
        f"largest weight difference from the uninterrupted run: {largest}; run-to-run "
        f"nondeterminism measured: {report.nondeterminism}; allowed: {report.tolerance}",
        f"wall-clock time: {report.seconds / 60:.1f} min",
    ]
    lines += [f"reference problem: {problem}" for problem in report.reference_problems]
    return "\n".join(lines)
