"""The tools' older spellings of an argument: hidden aliases that print one deprecation line.

Every tool names the run folder `--run-dir` and its product (a file or a folder) `--output`.
The spellings the tools had before keep working, hidden from `--help`: each prints one line,
`warning: <old> is deprecated; use <new>`, on stderr, then counts as the new spelling. This
table is the one place they are listed (standard library only).
"""

import argparse
import sys

# A run folder given as the first positional argument (`export.py runs/translator`).
POSITIONAL_RUN_DIR = "RUN_DIR"
# tool -> {old spelling: new spelling}.
OLD_SPELLINGS = {
    "train": {"--output-dir": "--run-dir"},
    "translate": {"--saved-model": "--model"},
    "evaluate": {"--saved-model": "--model", "--hypotheses": "--output"},
    "export": {POSITIONAL_RUN_DIR: "--run-dir", "--export-dir": "--output"},
    "average_checkpoints": {POSITIONAL_RUN_DIR: "--run-dir"},
    "convert_ctranslate2": {POSITIONAL_RUN_DIR: "--run-dir", "--output-dir": "--output"},
    "make_corpus_shards": {"--output-dir": "--output"},
}


def deprecation_line(old: str, new: str) -> str:
    """The line a tool prints on stderr for an old spelling.

    Example:

    >>> deprecation_line("--export-dir", "--output")
    'warning: --export-dir is deprecated; use --output'
    """
    if old == POSITIONAL_RUN_DIR:
        return f"warning: the run folder as a positional argument is deprecated; use {new} DIR"
    return f"warning: {old} is deprecated; use {new}"


class OldSpelling(argparse.Action):
    """An option's old spelling: prints `deprecation_line` on stderr and stores its value
    where the new spelling does (`dest`)."""

    def __init__(self, option_strings: list[str], dest: str, new: str, **kwargs) -> None:
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kwargs)
        self.new = new

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(deprecation_line(option_string, self.new), file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_old_spellings(
    container: argparse._ActionsContainer, tool: str, dests: dict[str, str]
) -> None:
    """Adds `tool`'s old option spellings (`OLD_SPELLINGS`) to `container` as hidden aliases.

    Args:
        container: the parser, or the mutually exclusive group that holds the new spelling.
        tool: the tool's name, e.g. `"evaluate"`.
        dests: new spelling -> the attribute it sets, for the old spellings to add here,
            e.g. `{"--output": "output"}`.
    """
    for old, new in OLD_SPELLINGS[tool].items():
        if old != POSITIONAL_RUN_DIR and new in dests:
            container.add_argument(old, dest=dests[new], action=OldSpelling, new=new)


def add_run_dir(parser: argparse.ArgumentParser, help_text: str) -> None:
    """Adds `--run-dir` and its old spelling, a hidden positional argument (check the two
    with `resolve_run_dir` once the arguments parse)."""
    parser.add_argument("--run-dir", default=None, help=help_text)
    parser.add_argument("old_run_dir", nargs="?", default=None, help=argparse.SUPPRESS)


def resolve_run_dir(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Sets `args.run_dir` from the positional old spelling (with its deprecation line);
    fails, with one line, if both or neither are given.

    Example:

    >>> parser = argparse.ArgumentParser(prog="tool")
    >>> add_run_dir(parser, "a run folder")
    >>> args = parser.parse_args(["--run-dir", "runs/a"])
    >>> resolve_run_dir(parser, args)
    >>> args.run_dir
    'runs/a'
    """
    old = vars(args).pop("old_run_dir", None)
    if old is not None:
        if args.run_dir is not None:
            parser.error(f"the run folder is given twice: --run-dir {args.run_dir} and {old}")
        print(deprecation_line(POSITIONAL_RUN_DIR, "--run-dir"), file=sys.stderr)
        args.run_dir = old
    if args.run_dir is None:
        parser.error("the following arguments are required: --run-dir")
