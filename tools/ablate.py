"""The paper's Table 3, swept at Multi30k scale: trains named variations of one base recipe
under the same number of updates, and writes their table and figure.

    python tools/ablate.py list                                  # the rows
    python tools/ablate.py sweep --work-dir runs/ablation --train-steps 6000 \\
        --train-args "--dataset multi30k --data-dir ../shared/data/multi30k --preset tiny"
    python tools/ablate.py table --work-dir runs/ablation --output docs/paper
    python tools/ablate.py costs --output docs/paper             # Table 1, a few minutes

`sweep` trains the base row with several seeds (`--base-seeds`, 3 by default) and every other
row once, each a `tools/train.py` run folder under `--work-dir` that resumes where it stopped:
kill the sweep and start the same command again, and it goes on with the row it was on. It
then writes `ablation.md`, `ablation.json` and `ablation.png` (into `--output`, by default the
work folder). `table` writes them again from the rows finished so far. The scores are the
validation split's (never the test set's): see tools/paper/table.py. `--records DIR` also
keeps each finished row's scores and settings (no weights) in DIR, a sweep folder of its own
that a later sweep, in a copy of it, resumes from. `costs` measures
Table 1 (per-layer forward time and FLOPs against the sequence length): see
tools/paper/layer_costs.py.
"""

import argparse
import shlex
import sys
from pathlib import Path

CHECKOUT = str(Path(__file__).resolve().parents[1])
if CHECKOUT not in sys.path:
    sys.path.insert(0, CHECKOUT)  # the checkout's packages, not another installed copy

from keras_attention_cli.arguments import (  # noqa: E402
    ArgumentParser,
    int_at_least,
    set_quiet_import,
)
from keras_attention_cli.errors import fail, run_command  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the rows and groups, with the paper's figures")
    costs = commands.add_parser("costs", help="Table 1: per-layer time and FLOPs against n")
    costs.add_argument("--output", required=True, help="where the table and figure go")
    costs.add_argument("--d-model", type=int_at_least(1), default=128, help="width d (128)")
    costs.add_argument("--lengths", type=int_at_least(1), nargs="+",
                       default=[16, 32, 64, 128, 256, 512, 1024],
                       help="sequence lengths n (16 to 1024, doubling)")  # fmt: skip
    costs.add_argument("--repeats", type=int_at_least(1), default=5,
                       help="timed calls per layer and length, the best counts (5)")  # fmt: skip
    for name, text in (("sweep", "train the rows not finished yet, then write the table"),
                       ("table", "write the table of the rows finished so far")):  # fmt: skip
        command = commands.add_parser(name, help=text)
        command.add_argument(
            "--work-dir", required=True, help="the sweep's folder (a run folder per row and seed)"
        )
        command.add_argument(
            "--rows",
            nargs="+",
            default=["all"],
            help="rows or groups (A-E, extra, all; the base always): default all",
        )
        command.add_argument(
            "--train-steps",
            type=int_at_least(1),
            required=name == "sweep",
            help="updates of every row (the budget)",
        )
        command.add_argument(
            "--train-args", default="", help="the base recipe, tools/train.py options in one string"
        )
        command.add_argument(
            "--base-seeds",
            type=int_at_least(0),
            nargs="+",
            default=[1, 2, 3],
            help="the base row's seeds (default 1 2 3)",
        )
        command.add_argument(
            "--seed",
            type=int_at_least(0),
            default=None,
            help="the other rows' seed (default: the first base seed)",
        )
        command.add_argument(
            "--output", default=None, help="where the table and figure go (default: --work-dir)"
        )
        command.add_argument(
            "--records",
            default=None,
            help="also copy each finished row's scores and settings, without its weights, "
            "into this folder (a sweep folder a later sweep resumes from; see "
            "tools/paper/records.py)",
        )
        if name == "sweep":
            command.add_argument(
                "--retry-failed",
                action="store_true",
                help="train again the rows whose earlier start failed",
            )
    return parser.parse_args(argv)


def _config(args: argparse.Namespace):
    from tools.paper.sweep import SETTINGS_FILE, SweepConfig, saved_settings
    from tools.paper.variations import select

    try:
        variations = select(args.rows)
    except ValueError as error:
        fail(f"--rows: {error}")
    train_args = shlex.split(args.train_args)
    train_steps = args.train_steps
    if args.command == "table" and train_steps is None:
        try:
            saved = saved_settings(args.work_dir)
        except ValueError as error:
            fail(str(error))
        if saved is None:
            fail(f"--work-dir {args.work_dir} holds no sweep ({SETTINGS_FILE} missing)")
        train_steps, train_args = saved["train_steps"], saved["train_args"]
    return SweepConfig(
        args.work_dir, variations, train_steps, train_args, tuple(args.base_seeds), args.seed,
        getattr(args, "retry_failed", False),
    )  # fmt: skip


def _list() -> None:
    from tools.paper.variations import VARIATIONS

    for variation in VARIATIONS:
        words = " ".join(variation.command_words()) or "(the recipe as given)"
        print(f"{variation.name:34} {words:60} paper: {variation.paper}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    set_quiet_import(getattr(args, "verbose", False))

    def command() -> None:
        if args.command == "list":
            _list()
            return
        if args.command == "costs":
            import keras_attention  # noqa: F401 (Keras imported quietly first)
            from tools.paper.layer_costs import measure, write_costs

            write_costs(measure(args.lengths, args.d_model, repeats=args.repeats), args.output)
            print(f"table: {Path(args.output) / 'layer_costs.md'} (and .json, .png)")
            return
        from tools.paper.sweep import collect_results, run_sweep
        from tools.paper.table import write_table

        config = _config(args)
        if args.command == "sweep":
            try:
                run_sweep(config, progress=lambda line: print(line, file=sys.stderr, flush=True))
            except ValueError as error:
                fail(str(error))
        results = collect_results(config)
        try:
            write_table(results, args.output or args.work_dir)
        except ValueError as error:
            fail(f"--work-dir {args.work_dir}: {error}")
        output = Path(args.output or args.work_dir)
        print(f"table: {output / 'ablation.md'} (and .json, .png)")
        if args.records is not None:
            from tools.paper.records import save_records

            try:
                copied = save_records(results, args.work_dir, args.records)
            except ValueError as error:
                fail(f"--records: {error}")
            print(f"records: {copied} rows in {args.records}")

    return run_command(command)


if __name__ == "__main__":
    sys.exit(main())
