"""Benchmarks of keras_attention, one subcommand each.

    python tools/benchmark.py train              # ours vs keras-hub, about 11 minutes on 2 cores
    python tools/benchmark.py train --quick      # a smoke run, about a minute
    python tools/benchmark.py train --jit --steps 10 --rounds 3 --json train.json

`train`: training throughput (non-padding target tokens per second) of our Transformer and of a
keras-hub model of the same size on the same Multi30k batches, with and without XLA, and each
with its natural batching; the ratios and the model FLOPs utilisation against a `tf.matmul`
peak measured in the same run. See tools/benchmarks/train_throughput.py.

    python tools/benchmark.py decode             # cache vs recompute, export vs library
    python tools/benchmark.py decode --quick
    python tools/benchmark.py decode --run-dir runs/multi30k --engines-only --sentences 500

`decode`: sentences per second of greedy and beam search over Multi30k test2016 with the
key/value cache and recomputing the decoder every step, the time of one step at positions 10,
30 and 60, and the exported SavedModel against the in-library translator. See
tools/benchmarks/decode_throughput.py. Then (unless `--no-engines`) ours against other
engines on the same batches, sentences/s and sacreBLEU side by side: CTranslate2 float32 and
int8, our int8 model, keras-hub's greedy and beam samplers over our cached step, with the
ratios ours / theirs. With `--run-dir`, a finished run's model (sacreBLEU then means
something); see tools/benchmarks/engines.py.

    python tools/benchmark.py serve --run-dir runs/multi30k   # a trained export
    python tools/benchmark.py serve --quick

`serve`: the exported SavedModel loaded as TF Serving loads it, each measurement in a fresh
process: sentences/s, p50/p99 latency and peak memory at requests of 1, 8, 64 and 2,000
sentences and with 8 concurrent callers; chunked against unchunked decoding, the `greedy`
signature, and the export against the in-library translator. See
tools/benchmarks/serve_throughput.py.

    python tools/benchmark.py faults             # 32 points, about 35 minutes on 2 cores
    python tools/benchmark.py faults --fast      # the CI's points
    python tools/benchmark.py faults --only "disk full"   # the 7 disk-full points
    python tools/benchmark.py faults --json faults.json --work-dir /tmp/faults

`faults`: SIGKILLs a tiny tools/train.py run at 25 points (in epochs, during checkpoint,
backup, log and model writes, during the export) and fills its disk at 7 more (each start must
then end with one `error:` line naming the file), starts the same command again each time
and checks that every file of the run folder loads and that the final weights equal those of
an uninterrupted run (within the nondeterminism measured between two uninterrupted runs);
prints points tried / points survived. See tools/benchmarks/fault_injection.py and
docs/reliability.md.

    python tools/benchmark.py compare --baseline bff2fbf           # train, decode, serve
    python tools/benchmark.py compare --baseline HEAD~1 --benchmarks train --quick

`compare`: the `train`, `decode` and `serve` benchmarks on an older revision of the code
(a `git archive` snapshot) and on the working tree, side by side in one run, each run a fresh
process, the sides alternating; the ratio new / old of every throughput beside the run-to-run
noise of each side. See tools/benchmarks/code_comparison.py.

    python tools/make_corpus_shards.py --pairs 500000 --shards 4 --output data/s05
    python tools/make_corpus_shards.py --pairs 4500000 --shards 32 --output data/s45
    python tools/benchmark.py stream data/s05 data/s45 --train-steps 20

`stream`: text shards streamed through `stream_batches`, each corpus in fresh processes: the
time to the first batch, the input pipeline's tokens/s with all cores and with one, peak
memory, and (with --train-steps) a `tiny` model trained on the stream; from the one-core rate,
the CPU cores per GPU that the paper's throughput needs. See
tools/benchmarks/stream_throughput.py.
"""

# ruff: noqa: E402 (the benchmarks are imported after set_quiet_import, below)

import argparse
import dataclasses
import functools
import json
import logging
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from keras_attention_cli.arguments import VERBOSE_HELP, set_quiet_import
from keras_attention_cli.errors import run_tool

# The benchmarks' options default to their configurations, whose modules import the library:
# unlike the other tools, this one imports it before parsing (quietly unless --verbose), so
# the imports below come after this call.
set_quiet_import("--verbose" in sys.argv)

from benchmarks.code_comparison import (
    BENCHMARKS,
    DEFAULT_ARGS,
    ComparisonConfig,
    format_comparison,
    run_comparison,
)
from benchmarks.decode import format_decode_table, run_decode_benchmark
from benchmarks.decode_throughput import DecodeBenchmarkConfig
from benchmarks.decode_throughput import quick_config as quick_decode_config
from benchmarks.fault_injection import (
    FAST_POINTS,
    LONG_POINTS,
    FaultConfig,
    format_report,
    run_fault_injection,
)
from benchmarks.serve_throughput import (
    ServeBenchmarkConfig,
    format_serve_table,
    run_serve_benchmark,
)
from benchmarks.serve_throughput import quick_config as quick_serve_config
from benchmarks.stream_throughput import (
    StreamBenchmarkConfig,
    format_stream_table,
    run_stream_benchmark,
)
from benchmarks.stream_throughput import quick_config as quick_stream_config
from benchmarks.train_throughput import (
    TrainBenchmarkConfig,
    format_table,
    quick_config,
    run_train_benchmark,
)

from keras_attention.core.atomic_files import json_text
from keras_attention.models.presets import PRESETS

TRAIN_DEFAULTS = TrainBenchmarkConfig()


def add_train_parser(subparsers) -> None:
    """The `train` subcommand's arguments (defaults: `TrainBenchmarkConfig`)."""
    parser = subparsers.add_parser(
        "train", help="training throughput: ours vs a keras-hub peer on Multi30k"
    )
    d = TRAIN_DEFAULTS
    parser.add_argument(
        "--preset", choices=sorted(PRESETS), default=None, help=f"default: {d.preset}"
    )
    parser.add_argument(
        "--pairs", type=int, default=None, help="first N Multi30k train pairs (default: all)"
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help=f"our batches timed per configuration and round, 0: an epoch ({d.steps})",
    )
    parser.add_argument(
        "--rounds", type=int, default=None, help=f"timed rounds, the best counts ({d.rounds})"
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help=f"padded tokens per bucketed batch, ours ({d.max_tokens})",
    )
    parser.add_argument(
        "--max-length", type=int, default=None, help=f"longest pair kept ({d.max_length})"
    )
    parser.add_argument(
        "--peer-batch-size",
        type=int,
        default=None,
        help=f"sentences per fixed batch, peer ({d.peer_batch_size})",
    )
    parser.add_argument(
        "--peer-length",
        type=int,
        default=None,
        help="the peer's fixed padded length (default: the longest pair read)",
    )
    parser.add_argument(
        "--vocabulary-size", type=int, default=None, help=f"SentencePiece ({d.vocabulary_size})"
    )
    jit = parser.add_mutually_exclusive_group()
    jit.add_argument(
        "--jit", dest="jit_modes", action="store_const", const=(True,), help="XLA only"
    )
    jit.add_argument(
        "--no-jit", dest="jit_modes", action="store_const", const=(False,), help="no XLA only"
    )
    jit.add_argument(
        "--both",
        dest="jit_modes",
        action="store_const",
        const=(True, False),
        help="with and without XLA (default)",
    )
    parser.add_argument("--data-dir", default=None, help="Multi30k folder")
    parser.add_argument("--cache-dir", default=None, help="where the tokenizer is cached")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="tiny everything, for a smoke run")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.set_defaults(run=run_train)


def train_config(args: argparse.Namespace) -> TrainBenchmarkConfig:
    """The `train` arguments as a config: `--quick` or the defaults, then the given flags."""
    names = [field.name for field in dataclasses.fields(TrainBenchmarkConfig)]
    given = {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
    if given.get("steps", 1) <= 0:
        given["steps"] = None  # the whole epoch
    return quick_config(**given) if args.quick else TrainBenchmarkConfig(**given)


def run_train(args: argparse.Namespace) -> dict:
    """Runs the training benchmark, prints its table; returns the results."""
    config = train_config(args)
    print("config:", json.dumps(dataclasses.asdict(config)), flush=True)
    result = run_train_benchmark(config)
    print(format_table(result))
    return result


def add_common_arguments(parser: argparse.ArgumentParser, defaults) -> None:
    """The arguments that the `decode` and `serve` subcommands share."""
    parser.add_argument("--preset", choices=sorted(PRESETS), default=None, help=defaults.preset)
    parser.add_argument("--sentences", type=int, default=None, help=f"({defaults.sentences})")
    extra = defaults.extra_length
    parser.add_argument(
        "--extra-length",
        type=int,
        default=None,
        help=f"({extra})" if extra is not None else "(50 with --run-dir, else 0)",
    )
    parser.add_argument("--data-dir", default=None, help="Multi30k folder")
    parser.add_argument("--cache-dir", default=None, help="where the tokenizer is cached")
    parser.add_argument("--quick", action="store_true", help="tiny everything, for a smoke run")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")


def run_benchmark(
    args: argparse.Namespace, config_class, quick, run: Callable, table: Callable
) -> dict:
    """Makes the config (`quick(**given)` with `--quick`, else `config_class(**given)`, from
    the arguments given), runs the benchmark, prints its table; returns the results."""
    names = [field.name for field in dataclasses.fields(config_class)]
    given = {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
    config = quick(**given) if args.quick else config_class(**given)
    print("config:", json.dumps(dataclasses.asdict(config)), flush=True)
    result = run(config)
    print(table(result))
    return result


def add_decode_parser(subparsers) -> None:
    """The `decode` subcommand's arguments (defaults: `DecodeBenchmarkConfig`)."""
    parser = subparsers.add_parser(
        "decode", help="decoding speed: cache vs recompute, exported vs in-library"
    )
    d = DecodeBenchmarkConfig()
    add_common_arguments(parser, d)
    parser.add_argument("--batch-size", type=int, default=None, help=f"({d.batch_size})")
    parser.add_argument("--beam-size", type=int, default=None, help=f"({d.beam_size})")
    parser.add_argument("--rounds", type=int, default=None, help=f"({d.rounds})")
    parser.add_argument("--run-dir", default=None, help="a finished run (default: random weights)")
    parser.add_argument(
        "--alpha", type=float, default=None, help="length penalty (default: the run's, else 0.6)"
    )
    parser.add_argument(
        "--length-penalties",
        type=float,
        nargs="+",
        default=None,
        help=f"CTranslate2 length penalties tried, the closest BLEU to ours counts "
        f"({' '.join(map(str, d.length_penalties))})",
    )
    engines = parser.add_mutually_exclusive_group()
    engines.add_argument(
        "--no-engines",
        dest="engines",
        action="store_false",
        default=None,
        help="skip the engines section (CTranslate2, keras-hub, int8 against ours)",
    )
    engines.add_argument(
        "--engines-only",
        action="store_true",
        default=None,
        help="only the engines section",
    )
    parser.set_defaults(
        run=functools.partial(
            run_benchmark,
            config_class=DecodeBenchmarkConfig,
            quick=quick_decode_config,
            run=run_decode_benchmark,
            table=format_decode_table,
        )
    )


def add_serve_parser(subparsers) -> None:
    """The `serve` subcommand's arguments (defaults: `ServeBenchmarkConfig`)."""
    parser = subparsers.add_parser(
        "serve", help="serving throughput, latency and memory of the SavedModel"
    )
    d = ServeBenchmarkConfig()
    add_common_arguments(parser, d)
    parser.add_argument("--run-dir", default=None, help="a finished run (default: random weights)")
    parser.add_argument("--requests", type=int, default=None, help=f"per size ({d.requests})")
    parser.add_argument("--chunk-size", type=int, default=None, help=f"({d.chunk_size})")
    parser.set_defaults(
        run=functools.partial(
            run_benchmark,
            config_class=ServeBenchmarkConfig,
            quick=quick_serve_config,
            run=run_serve_benchmark,
            table=format_serve_table,
        )
    )


def add_faults_parser(subparsers) -> None:
    """The `faults` subcommand's arguments (defaults: `FaultConfig`)."""
    parser = subparsers.add_parser(
        "faults", help="SIGKILL a tiny training run at many points; it must resume intact"
    )
    parser.add_argument(
        "--fast", action="store_true", help="the CI's points only (two kills, no export)"
    )
    parser.add_argument(
        "--only", default=None, metavar="TEXT",
        help="only the points whose name holds TEXT (e.g. 'disk full')",
    )  # fmt: skip
    parser.add_argument(
        "--work-dir", default=None, help="keep the run folders here (default: removed)"
    )
    parser.add_argument(
        "--references",
        type=int,
        default=FaultConfig.references,
        help="uninterrupted runs, to measure the nondeterminism (%(default)s)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.set_defaults(run=run_faults)


def run_faults(args: argparse.Namespace) -> dict:
    """Runs the fault injection, prints its report; returns the results."""
    if args.fast:
        config = FaultConfig(FAST_POINTS, epochs=2, export=False, references=args.references)
    else:
        config = FaultConfig(LONG_POINTS, references=args.references)
    if args.only is not None:
        config.points = tuple(point for point in config.points if args.only in point.name)
        if not config.points:
            raise SystemExit(f"error: --only {args.only!r} names no fault point")
    config.work_dir = args.work_dir
    report = run_fault_injection(config, progress=lambda line: print(line, flush=True))
    print(format_report(report))
    return report.as_dict()


def add_stream_parser(subparsers) -> None:
    """The `stream` subcommand's arguments (defaults: `StreamBenchmarkConfig`)."""
    parser = subparsers.add_parser(
        "stream", help="streaming text shards: memory, first batch, tokens/s per core"
    )
    d = StreamBenchmarkConfig()
    parser.add_argument(
        "corpus_dirs", nargs="+", help="folders of shards (tools/make_corpus_shards.py)"
    )
    parser.add_argument("--batches", type=int, default=None, help=f"({d.batches})")
    parser.add_argument("--max-tokens", type=int, default=None, help=f"({d.max_tokens})")
    parser.add_argument("--vocabulary-size", type=int, default=None, help=f"({d.vocabulary_size})")
    parser.add_argument("--train-steps", type=int, default=None, help=f"({d.train_steps})")
    parser.add_argument("--quick", action="store_true", help="tiny everything, for a smoke run")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")

    def run(args: argparse.Namespace) -> dict:
        args.corpus_dirs = tuple(args.corpus_dirs)
        return run_benchmark(
            args, StreamBenchmarkConfig, quick_stream_config, run_stream_benchmark,
            format_stream_table,
        )  # fmt: skip

    parser.set_defaults(run=run)


def add_compare_parser(subparsers) -> None:
    """The `compare` subcommand's arguments (defaults: `ComparisonConfig`)."""
    parser = subparsers.add_parser(
        "compare", help="train, decode and serve on an older revision and on this one"
    )
    parser.add_argument(
        "--baseline", required=True, metavar="REVISION",
        help="the git revision of the old side, e.g. a commit or main~3",
    )  # fmt: skip
    parser.add_argument(
        "--benchmarks", nargs="+", choices=BENCHMARKS, default=list(BENCHMARKS),
        help="which benchmarks (default: all three)",
    )  # fmt: skip
    parser.add_argument(
        "--repeats", type=int, default=ComparisonConfig.repeats,
        help="runs of each benchmark on each side, >= 2 (%(default)s)",
    )  # fmt: skip
    for name in BENCHMARKS:
        parser.add_argument(
            f"--{name}-args", default=None, metavar="ARGS",
            help=f"arguments of `{name}` for both sides, one string "
            f"(default: {' '.join(DEFAULT_ARGS[name]) or 'none'})",
        )  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="every benchmark with --quick")
    parser.add_argument("--work-dir", default=None, help="for the snapshot (default: temporary)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.set_defaults(run=run_compare)


def run_compare(args: argparse.Namespace) -> dict:
    """Runs the comparison, prints its table; returns the results."""
    given = {name: getattr(args, f"{name}_args") for name in BENCHMARKS}
    try:
        config = ComparisonConfig(
            baseline=args.baseline,
            benchmarks=tuple(args.benchmarks),
            repeats=args.repeats,
            quick=args.quick,
            benchmark_args={name: shlex.split(text) for name, text in given.items() if text},
            work_dir=args.work_dir,
        )
        result = run_comparison(config, progress=lambda line: print(line, flush=True))
    except (ValueError, RuntimeError) as error:  # a bad argument; a side's benchmark failed
        raise SystemExit(f"error: {error}") from None
    print(format_comparison(result))
    return result


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_train_parser(subparsers)
    add_decode_parser(subparsers)
    add_serve_parser(subparsers)
    add_faults_parser(subparsers)
    add_stream_parser(subparsers)
    add_compare_parser(subparsers)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")  # retracing notices: every batch shape is traced once
    result = args.run(args)
    if getattr(args, "json", None):
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json_text(result))
        print("results:", args.json)


if __name__ == "__main__":
    run_tool(main)
