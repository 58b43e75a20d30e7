"""Serving throughput, latency and memory of the exported SavedModel, as TF Serving loads it.

Each variant runs in a fresh process (`serve_worker.py`): the SavedModel loaded with
TensorFlow and tensorflow-text only, one warm-up request, then the sentences (Multi30k
test2016 sources, repeated if need be) sent in requests of 1, 8, 64 and 2,000 sentences, and
by 8 concurrent callers, smallest first. Reported: sentences/s, per-request p50 and p99
latency, resident memory once loaded, and each run's peak above its start.

Side by side, on the same model and sentences: the export decoding in chunks (the default,
`Translator.chunk_size`) and unchunked (the whole request as one batch), at 64 and 2,000
sentences a request; the `greedy` signature; the in-library `Translator`, which the
exported signature should match or beat; and the concurrent callers again with the export
served on one intra-op thread (TF Serving's `--tensorflow_intra_op_parallelism=1`).

The model is a finished run folder's (`--run-dir`: `model.keras`, `tokenizer.model`, its beam
width and length penalty), or a preset with random weights and a tokenizer learned on
Multi30k train (a random model never chooses EOS, so its outputs run to their length limit).
"""

import dataclasses
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from keras_attention.data.multi30k import load_multi30k
from keras_attention.serving.export import GREEDY_SIGNATURE_KEY, SIGNATURE_KEY, export_translator
from keras_attention.serving.translator import DEFAULT_CHUNK_SIZE, Translator

from .timing import SMOKE_MODEL
from .train_throughput import DEFAULT_DATA_DIR, cached_tokenizer

WORKER = Path(__file__).with_name("serve_worker.py")


@dataclasses.dataclass
class ServeBenchmarkConfig:
    """Settings of `run_serve_benchmark`.

    Attributes:
        run_dir: a finished run folder; `None`: `preset` with random weights.
        preset: the model of a random-weights run.
        model_overrides: preset arguments replaced (random weights only).
        vocabulary_size: its SentencePiece vocabulary (learned from Multi30k train, cached).
        beam_size: beam width of a random-weights run (a run folder's own otherwise).
        alpha: its length-penalty exponent.
        extra_length: outputs may be this many tokens longer than their source.
        batch_sizes: sentences per request, one measurement each.
        requests: requests timed per batch size (fewer when the sentences run out).
        sentences: the most sentences sent in one measurement (test2016 sources, repeated).
        callers: concurrent callers of the concurrent measurement.
        caller_batch_size: sentences per request of each concurrent caller.
        chunk_size: the export's chunk size (compared with unchunked decoding).
        data_dir: the Multi30k folder.
        cache_dir: where the tokenizer is cached.
        timeout: seconds a measurement may take.
    """

    run_dir: str | None = None
    preset: str = "small"
    model_overrides: dict = dataclasses.field(default_factory=dict)
    vocabulary_size: int = 8000
    beam_size: int = 4
    alpha: float = 0.6
    extra_length: int = 50
    batch_sizes: tuple = (1, 8, 64, 2000)
    requests: int = 32
    sentences: int = 2000
    callers: int = 8
    caller_batch_size: int = 8
    chunk_size: int = DEFAULT_CHUNK_SIZE
    data_dir: str | None = None
    cache_dir: str | None = None
    timeout: float = 1800


# The export served with one intra-op thread, so that concurrent requests run side by side
# (each op of a small decoding step gains little from a second thread).
ONE_THREAD = "export 1 thread"


def quick_config(**changes) -> ServeBenchmarkConfig:
    """A smoke-test configuration: a tiny random model, short outputs, few sentences."""
    settings = dict(
        preset="tiny",
        model_overrides=SMOKE_MODEL,
        vocabulary_size=500,
        beam_size=2,
        extra_length=2,
        batch_sizes=(1, 4, 40),
        requests=4,
        sentences=40,
        callers=2,
        caller_batch_size=4,
        chunk_size=16,
    )
    return ServeBenchmarkConfig(**{**settings, **changes})


def _model_folder(config: ServeBenchmarkConfig, sources: list[str], work: Path) -> dict:
    """The model's folder (`model.keras`, `tokenizer.model`), its search and its two
    exports (chunked and unchunked), made in `work` for a random model."""
    from keras_attention.models import Transformer
    from keras_attention.runs.files import run_beam_search
    from keras_attention.runs.train import load_run

    if config.run_dir is not None:
        folder = Path(config.run_dir)
        beam_size, alpha = run_beam_search(folder)
        model, tokenizer = load_run(folder)
    else:
        folder, (beam_size, alpha) = work / "model", (config.beam_size, config.alpha)
        train = load_multi30k(config.data_dir or DEFAULT_DATA_DIR)["train"]
        tokenizer = cached_tokenizer(train[0] + train[1], config.vocabulary_size, config.cache_dir)
        model = Transformer.from_preset(
            config.preset, vocabulary_size=tokenizer.vocabulary_size, **config.model_overrides
        )
        model.build()
        folder.mkdir()
        model.save(folder / "model.keras")
        tokenizer.save(folder / "tokenizer.model")
    exports = {}
    for name, chunk_size in (("chunked", config.chunk_size), ("unchunked", None)):
        translator = Translator(
            model,
            tokenizer,
            beam_size,
            alpha,
            extra_length=config.extra_length,
            chunk_size=chunk_size,
        )
        exports[name] = str(
            export_translator(translator, work / name, version=1, warmup_sentences=sources[:8])
        )
    return {"folder": str(folder), "beam_size": beam_size, "alpha": alpha, "exports": exports}


def _measure(spec: dict, work: Path, timeout: float) -> list[dict]:
    """Runs one variant's measurements in a fresh process; returns a row for each."""
    path = work / "spec.json"
    path.write_text(json.dumps(spec))
    done = subprocess.run(
        [sys.executable, str(WORKER), str(path)],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"serve measurement failed: {done.stderr[-3000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return [
        {
            "variant": spec["variant"],
            "loaded_mb": figures["loaded_mb"],
            "intra_op_threads": figures["intra_op_threads"],
            **run,
        }
        for run in figures["runs"]
    ]


def _plan(config: ServeBenchmarkConfig) -> dict[str, list[tuple[int, int]]]:
    """The measurements of each variant, `(batch size, callers)`, smallest first."""
    sizes = sorted(config.batch_sizes)
    export = [(size, 1) for size in sizes]
    export.insert(
        sizes.index(config.caller_batch_size) + 1, (config.caller_batch_size, config.callers)
    )
    return {
        "export": export,
        ONE_THREAD: [(config.caller_batch_size, config.callers)],
        "export unchunked": [(sizes[-2], 1), (sizes[-1], 1)],
        "greedy": [(sizes[-2], 1)],
        "library": [(sizes[-2], 1)],
    }


def run_serve_benchmark(config: ServeBenchmarkConfig) -> dict:
    """Measures every variant of `_plan`; returns `{"rows": [...], "ratios": {...}}`."""
    sources = load_multi30k(config.data_dir or DEFAULT_DATA_DIR)["test"][0]
    pool = (sources * (config.sentences // len(sources) + 1))[: config.sentences]
    rows = []
    with tempfile.TemporaryDirectory(prefix="serve-benchmark-") as work:
        work = Path(work)
        model = _model_folder(config, sources, work)
        for variant, runs in _plan(config).items():
            spec = {
                "variant": variant,
                "kind": "library" if variant == "library" else "export",
                "path": {
                    "library": model["folder"],
                    "export unchunked": model["exports"]["unchunked"],
                }.get(variant, model["exports"]["chunked"]),
                "signature": GREEDY_SIGNATURE_KEY if variant == "greedy" else SIGNATURE_KEY,
                "sentences": pool,
                "runs": [
                    (size, callers, min(len(pool), size * callers * config.requests))
                    for size, callers in runs
                ],
                "beam_size": model["beam_size"],
                "alpha": model["alpha"],
                "extra_length": config.extra_length,
                "chunk_size": config.chunk_size,
                # TF Serving's --tensorflow_intra_op_parallelism=1 (None: TensorFlow's default,
                # one thread a core); inter-op threads stay one a core.
                "intra_op_threads": 1 if variant == ONE_THREAD else None,
            }
            for row in _measure(spec, work, config.timeout):
                rows.append(row)
                print(format_row(row), flush=True)
    return {"rows": rows, "ratios": serve_ratios(rows, config)}


def serve_ratios(rows: list[dict], config: ServeBenchmarkConfig) -> dict:
    """Chunked against unchunked at the largest request, the export against the library."""

    def row(variant: str, batch_size: int, callers: int = 1) -> dict:
        return next(
            r
            for r in rows
            if (r["variant"], r["batch_size"], r["callers"]) == (variant, batch_size, callers)
        )

    def concurrent(variant: str) -> float:
        return row(variant, config.caller_batch_size, config.callers)["sentences_per_s"]

    largest, middle = max(config.batch_sizes), sorted(config.batch_sizes)[-2]
    chunked, unchunked = row("export", largest), row("export unchunked", largest)
    return {
        f"chunked / unchunked speed at {largest}": chunked["sentences_per_s"]
        / unchunked["sentences_per_s"],
        f"chunked peak memory at {largest} (MB above the start)": chunked["peak_above_start_mb"],
        f"unchunked peak memory at {largest} (MB above the start)": unchunked[
            "peak_above_start_mb"
        ],
        f"export / library speed at {middle}": row("export", middle)["sentences_per_s"]
        / row("library", middle)["sentences_per_s"],
        f"greedy / beam speed at {middle}": row("greedy", middle)["sentences_per_s"]
        / row("export", middle)["sentences_per_s"],
        f"{config.callers} callers: 1 intra-op thread / default speed": concurrent(ONE_THREAD)
        / concurrent("export"),
    }


def format_row(row: dict) -> str:
    return (
        f"{row['variant']:<17} batch {row['batch_size']:>5} x{row['callers']} callers  "
        f"{row['sentences']:>5} sentences  {row['sentences_per_s']:8.1f} sentences/s  "
        f"p50 {row['p50_ms']:9.1f} ms  p99 {row['p99_ms']:9.1f} ms  "
        f"loaded {row['loaded_mb']:6.0f} MB  peak +{row['peak_above_start_mb']:6.0f} MB"
    )


def format_serve_table(result: dict) -> str:
    lines = [format_row(row) for row in result["rows"]]
    lines += [f"{name}: {value:.2f}" for name, value in result["ratios"].items()]
    return "\n".join(lines)
