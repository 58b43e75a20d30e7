"""The same benchmarks on an older revision of the code and on this one, side by side.

A change that restructures the code must not cost speed. `run_comparison` takes a snapshot of
a baseline revision (`git archive`, into a temporary folder), then runs each benchmark
(`train`, `decode`, `serve`) `repeats` times on each side, alternating which side goes first
(old, new, then new, old, ...) so that a machine that slows down or warms up over the run
favours neither. Each run is a fresh process: `tools/benchmark.py` of that side, with
`PYTHONPATH` at that side's root so that it imports that side's `keras_attention`, in the
same working folder and with the same arguments, so the same data, seeds and batches.

Every throughput of a benchmark's JSON (`throughputs`: tokens or sentences per second;
higher is better) is compared: the ratio is the new side's mean over the old side's; the noise is
the larger of the two sides' spreads between their own repeats ((max - min) / mean). A ratio
within 1 +- noise is reported as noise, not as a change.
"""

import dataclasses
import json
import os
import shlex
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ("train", "decode", "serve")
# Each benchmark's arguments unless given: the engines section of `decode` times other
# engines (CTranslate2, keras-hub), not our code.
DEFAULT_ARGS = {"train": [], "decode": ["--no-engines"], "serve": []}


@dataclasses.dataclass
class ComparisonConfig:
    """Settings of `run_comparison`.

    Attributes:
        baseline: the git revision of the old side (a commit, branch or tag).
        benchmarks: which of `BENCHMARKS` to run.
        repeats: runs of each benchmark on each side (2 or more, to measure the noise).
        quick: pass `--quick` to every benchmark (a smoke run).
        benchmark_args: per benchmark, the arguments given to both sides (default:
            `DEFAULT_ARGS`).
        work_dir: where the snapshot and the JSON files go (default: a temporary folder).
    """

    baseline: str
    benchmarks: tuple[str, ...] = BENCHMARKS
    repeats: int = 2
    quick: bool = False
    benchmark_args: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    work_dir: str | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.benchmarks) - set(BENCHMARKS))
        if unknown:
            raise ValueError(f"unknown benchmarks {unknown}; choose from {list(BENCHMARKS)}")
        if self.repeats < 2:
            raise ValueError(f"repeats must be >= 2 to measure the noise; got {self.repeats}")


def snapshot(revision: str, destination: Path, repo: Path = REPO_ROOT) -> Path:
    """The files of `revision` of the git repository `repo`, written under `destination`.

    Raises:
        ValueError: naming `revision` if git does not know it.
    """
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision],
        cwd=repo,
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        message = archive.stderr.decode(errors="replace").strip().splitlines()
        raise ValueError(f"--baseline {revision!r}: {message[-1] if message else 'unknown'}")
    destination.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile() as file:
        file.write(archive.stdout)
        file.seek(0)
        with tarfile.open(fileobj=file) as tar:
            tar.extractall(destination, filter="data")
    return destination


def side_order(repeat: int) -> tuple[str, str]:
    """Which side runs first in round `repeat`: old first in even rounds, new first in odd."""
    return ("old", "new") if repeat % 2 == 0 else ("new", "old")


def throughputs(benchmark: str, result: dict) -> dict[str, float]:
    """The throughputs (higher is better) of one benchmark's JSON result, by readable names:
    `train`'s tokens/s of each run; `decode`'s sentences/s of each search, cached and
    recomputed, with and without dropping finished rows, of the export and the in-library
    translator, and of the float32 and int8 models; `serve`'s sentences/s of each row
    (variant, request size, callers). Figures a result lacks are left out."""
    found = {}
    if benchmark == "train":
        for name, run in result.get("runs", {}).items():
            found[f"{name} tokens/s"] = run["tokens_per_second"]
    elif benchmark == "decode":
        for search, timing in result.get("sentences_per_second", {}).items():
            for key in ("cached", "recomputed", "cached_all_rows", "recomputed_all_rows"):
                if key in timing:
                    found[f"{search} {key} sent/s"] = timing[key]
        for key in ("exported", "in_library"):
            if key in result.get("export", {}):
                found[f"{key} translator sent/s"] = result["export"][key]
        for search, timing in result.get("int8", {}).items():
            if isinstance(timing, dict):
                for key in ("float32", "int8"):
                    if key in timing:
                        found[f"{search} {key} model sent/s"] = timing[key]
    elif benchmark == "serve":
        for row in result.get("rows", []):
            name = f"{row['variant']}, {row['batch_size']} x {row['callers']} callers sent/s"
            found[name] = row["sentences_per_s"]
    return {name: float(value) for name, value in found.items()}


def spread(values: Sequence[float]) -> float:
    """(max - min) / mean of repeated measurements of one thing."""
    mean = sum(values) / len(values)
    return (max(values) - min(values)) / mean if mean else 0.0


def compare_samples(old: list[dict[str, float]], new: list[dict[str, float]]) -> list[dict]:
    """One row per throughput measured on both sides: the means, the ratio new / old, the
    noise (the larger side's spread) and the verdict (`faster`, `slower` or `noise`)."""
    rows = []
    for name in sorted(set.intersection(*(set(sample) for sample in old + new))):
        old_values = [sample[name] for sample in old]
        new_values = [sample[name] for sample in new]
        old_mean = sum(old_values) / len(old_values)
        new_mean = sum(new_values) / len(new_values)
        ratio = new_mean / old_mean if old_mean else float("nan")
        noise = max(spread(old_values), spread(new_values))
        verdict = "faster" if ratio > 1.0 else "slower"
        if abs(ratio - 1.0) <= noise:
            verdict = "noise"
        rows.append(
            {"name": name, "old": old_mean, "new": new_mean, "ratio": ratio, "noise": noise,
             "verdict": verdict}
        )  # fmt: skip
    return rows


def run_benchmark(
    side_root: Path, benchmark: str, arguments: list[str], json_path: Path, cwd: Path
) -> dict:
    """Runs `tools/benchmark.py BENCHMARK ARGUMENTS --json JSON_PATH` of the checkout at
    `side_root`, importing that checkout's package; returns its JSON result."""
    environment = {**os.environ, "PYTHONPATH": str(side_root)}
    script = side_root / "tools" / "benchmark.py"
    command = [sys.executable, str(script), benchmark, *arguments, "--json", str(json_path)]
    done = subprocess.run(command, cwd=cwd, env=environment, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} (PYTHONPATH={side_root}) failed")
    return json.loads(json_path.read_text())


def run_comparison(
    config: ComparisonConfig,
    progress: Callable[[str], None] = print,
    runner: Callable[..., dict] = run_benchmark,
) -> dict:
    """Runs the benchmarks on both sides (see the module docstring); returns the settings, each
    run's throughputs and, per benchmark, the rows of `compare_samples`."""
    with tempfile.TemporaryDirectory(prefix="compare-", dir=config.work_dir) as work:
        work = Path(work)
        sides = {"old": snapshot(config.baseline, work / "old"), "new": REPO_ROOT}
        samples = {name: {"old": [], "new": []} for name in config.benchmarks}
        for benchmark in config.benchmarks:
            arguments = config.benchmark_args.get(benchmark, DEFAULT_ARGS[benchmark])
            arguments = [*arguments, *(["--quick"] if config.quick else [])]
            for repeat in range(config.repeats):
                for side in side_order(repeat):
                    progress(f"{benchmark}: {side} side, run {repeat + 1} of {config.repeats}")
                    json_path = work / f"{benchmark}-{side}-{repeat}.json"
                    result = runner(sides[side], benchmark, arguments, json_path, REPO_ROOT)
                    samples[benchmark][side].append(throughputs(benchmark, result))
    return {
        "config": dataclasses.asdict(config),
        "samples": samples,
        "rows": {name: compare_samples(**sides) for name, sides in samples.items()},
    }


def format_comparison(result: dict) -> str:
    """The rows of `run_comparison` as a table per benchmark."""
    config = result["config"]
    lines = [
        f"baseline {config['baseline']} (old) against the working tree (new), "
        f"{config['repeats']} runs each, alternating; ratio = new / old, noise = the larger "
        "spread (max - min) / mean of one side's runs"
    ]
    for benchmark, rows in result["rows"].items():
        lines += ["", f"{benchmark}:", f"{'throughput':<50}{'old':>10}{'new':>10}{'ratio':>8}"
                  f"{'noise':>8}  verdict"]  # fmt: skip
        for row in rows:
            lines.append(
                f"{row['name'][-50:]:<50}{row['old']:>10.1f}{row['new']:>10.1f}"
                f"{row['ratio']:>8.3f}{row['noise']:>8.3f}  {row['verdict']}"
            )
    return "\n".join(lines)
