"""Write a large synthetic English-German corpus as text shards, for streaming at scale.

python tools/make_corpus_shards.py --pairs 4500000 --shards 32 --output data/synthetic

The project's generated grammar, drawn with replacement, written shard by shard (memory stays
flat): `train.NNNNN-of-MMMMM.en.gz` and `.de.gz`, line i of one translating line i of the
other, and `val.en`/`val.de`, `test.en`/`test.de` (`--held-out` distinct pairs each): the
folder `tools/train.py --dataset shards --data-dir` reads. About 15,000 pairs a second per
process on these CPUs. Errors are one line, `error: ...`, with exit status 2; --output-dir,
the old spelling of --output, still works, with a deprecation line on stderr.
"""

import argparse
import os
import time

from keras_attention_cli.arguments import ArgumentParser, int_at_least
from keras_attention_cli.errors import run_command, user_errors
from keras_attention_cli.files import check_output_dir
from keras_attention_cli.old_spellings import add_old_spellings


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The checked arguments; argument errors exit with one line, `error: ...`."""
    parser = ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int_at_least(1), required=True, help="pairs in all")
    parser.add_argument("--shards", type=int_at_least(1), default=16, help="shard pairs")
    parser.add_argument("--output", default=None, help="the shards' folder (required)")
    add_old_spellings(parser, "make_corpus_shards", {"--output": "output"})
    parser.add_argument("--seed", type=int, default=0, help="the grammar's seed (default: 0)")
    parser.add_argument("--processes", type=int_at_least(1), default=1, help="shards at once")
    parser.add_argument("--plain", action="store_true", help="plain text, not gzip")
    parser.add_argument(
        "--held-out", type=int_at_least(1), default=500, help="pairs of val.* and test.* each"
    )
    args = parser.parse_args(argv)
    if args.output is None:
        parser.error("the following arguments are required: --output")
    if args.pairs < args.shards:
        parser.error(f"--pairs {args.pairs} is fewer than --shards {args.shards}")
    return args


def run(argv: list[str] | None = None) -> None:
    """The command's work: `main` without the exit status."""
    args = parse_args(argv)
    # Imported once the arguments parse: the package loads Keras and TensorFlow.
    from keras_attention.runs.output_guard import check_output_folder

    with user_errors():
        check_output_dir(args.output, "--output")
        check_output_folder(args.output, "--output")  # no run's files
    from keras_attention.data.corpus_shards import write_held_out, write_sharded_corpus

    started = time.monotonic()
    with user_errors(OSError):
        paths = write_sharded_corpus(
            args.output,
            args.pairs,
            args.shards,
            seed=args.seed,
            compress=not args.plain,
            processes=args.processes,
        )
        write_held_out(args.output, args.held_out, seed=args.seed)
    seconds = time.monotonic() - started
    size = sum(os.path.getsize(p) for pair in paths for p in pair)
    print(
        f"wrote {args.pairs} pairs in {len(paths)} shard pairs to {args.output} "
        f"({size / 2**20:.1f} MiB) in {seconds:.1f} s"
    )


def main(argv: list[str] | None = None) -> int:
    """Runs the command with `argv` (default: `sys.argv[1:]`); returns its exit status.

    The console script `keras-attention-make-corpus-shards` and `tools/make_corpus_shards.py`
    call it. User errors exit with one line, `error: ...`, status 2 (`SystemExit`); see
    `run_command`.
    """
    return run_command(lambda: run(argv))
