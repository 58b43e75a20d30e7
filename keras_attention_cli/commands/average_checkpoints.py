"""Average the weights of a run's epoch checkpoints into one model (paper, Section 6.1).

python tools/average_checkpoints.py --run-dir runs/translator --last 5
python tools/average_checkpoints.py --run-dir runs/translator --epochs 8 9 10 \
    --output avg.weights.h5

The run may still be training: the model is rebuilt from its config.json and tokenizer.model
(model.keras is not needed). The output is a full model (.keras) or weights only
(.weights.h5, for `tools/evaluate.py --checkpoint PATH`); it is written atomically, and
checked before any work. Errors are one line, `error: ...`, naming the argument or file (a
missing or corrupt checkpoint or config.json), with exit status 2. The run folder given
positionally (the old spelling) still works, with a deprecation line on stderr.
"""

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from keras_attention_cli.arguments import ArgumentParser
from keras_attention_cli.errors import UserError, fail, run_command, user_errors
from keras_attention_cli.files import check_output_file
from keras_attention_cli.old_spellings import add_run_dir, resolve_run_dir

OUTPUT_SUFFIXES = (".keras", ".weights.h5")
DEFAULT_LAST = 5


def check_output(output: str, run_dir: str) -> None:
    """Checks, before any work, that `output` can be written: a `.keras` or `.weights.h5`
    name in an existing, writable folder, and none of the run's files (its checkpoints, the
    inputs) nor another run's (`runs.output_guard`).

    Raises:
        UserError: naming `--output` and what is wrong.
        OutputGuardError: naming `--output` and the run file it would replace.
    """
    from keras_attention.runs import output_guard

    if not output.endswith(OUTPUT_SUFFIXES):
        raise UserError(f"--output must end with .keras or .weights.h5; got {output}")
    check_output_file(output, "--output")
    output_guard.check_output_file(output, "--output", [run_dir])


def checkpoint_paths(args: argparse.Namespace) -> list[Path]:
    """The checkpoints to average: those of `--epochs`, else the `--last` N.

    Raises:
        FileNotFoundError: naming a missing checkpoint or checkpoint folder.
        ValueError: if the folder holds fewer than N checkpoints.
    """
    from keras_attention.runs.files import CHECKPOINT_DIR, epoch_checkpoint
    from keras_attention.training.checkpoints import last_checkpoints

    if args.epochs is None:
        return last_checkpoints(os.path.join(args.run_dir, CHECKPOINT_DIR), args.last)
    paths = [epoch_checkpoint(args.run_dir, epoch) for epoch in sorted(args.epochs)]
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"no checkpoint file {path}")
    return paths


def save_atomically(model, output: str) -> None:
    """Saves `model` (`.keras`) or its weights (`.weights.h5`) to `output` via a temporary
    file in the same folder, so that `output` is either the old file or the whole new one."""
    from keras_attention.core.weights_file import write_weights_file

    path = Path(output)
    staging = Path(tempfile.mkdtemp(dir=path.parent, prefix=".averaging-"))
    try:
        if path.name.endswith(".weights.h5"):
            # Built in memory: h5py crashes when a full disk fails its write half-way.
            write_weights_file(model, staging / path.name)
        else:
            model.save(staging / path.name)
        os.replace(staging / path.name, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The checked arguments (`--last` 5 when neither it nor `--epochs`); argument errors exit
    with one line, `error: ...`."""
    parser = ArgumentParser(description=__doc__.split("\n")[0])
    add_run_dir(parser, "a folder written by tools/train.py (it may still be training)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--last", type=int, default=None, help=f"average the last N checkpoints ({DEFAULT_LAST})"
    )
    which.add_argument(
        "--epochs", type=int, nargs="+", default=None, metavar="EPOCH",
        help="average these epochs' checkpoints, e.g. --epochs 8 9 10",
    )  # fmt: skip
    parser.add_argument(
        "--output", default=None, help="a .keras or .weights.h5 file; its folder must exist "
        "(default: RUN_DIR/averaged.keras)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    resolve_run_dir(parser, args)
    if args.epochs is None and args.last is None:
        args.last = DEFAULT_LAST
    if args.last is not None and args.last < 1:
        parser.error(f"--last must be >= 1; got {args.last}")
    if args.epochs is not None:
        if min(args.epochs) < 1:
            parser.error(f"--epochs must be >= 1; got {args.epochs}")
        if len(set(args.epochs)) != len(args.epochs):
            parser.error(f"--epochs names an epoch twice: {args.epochs}")
    return args


def run(argv: list[str] | None = None) -> None:
    """The command's work: `main` without the exit status."""
    args = parse_args(argv)
    config = os.path.join(args.run_dir, "config.json")
    if not os.path.isfile(config):
        fail(f"no run config at {config}; is {args.run_dir} a run of tools/train.py?")
    output = args.output or os.path.join(args.run_dir, "averaged.keras")
    with user_errors():
        check_output(output, args.run_dir)
    # Imported once the arguments are checked, so that their errors come first.
    from keras_attention.runs.files import build_run_model
    from keras_attention.training.checkpoints import average_checkpoints

    # A missing, corrupt or foreign checkpoint, too few of them, a corrupt config.json.
    with user_errors():
        paths = checkpoint_paths(args)
        model = average_checkpoints(build_run_model(args.run_dir), paths)
        save_atomically(model, output)
    print(f"averaged {len(paths)} checkpoints ({paths[0].name} .. {paths[-1].name}) -> {output}")


def main(argv: list[str] | None = None) -> int:
    """Runs the command with `argv` (default: `sys.argv[1:]`); returns its exit status.

    The console script `keras-attention-average-checkpoints` and `tools/average_checkpoints.py`
    call it. User errors exit with one line, `error: ...`, status 2 (`SystemExit`); see
    `run_command`.
    """
    return run_command(lambda: run(argv))
