"""The tools' argument parser, argument types and shared options (standard library only).

A tool defines its arguments with `ArgumentParser` and imports the library once they parse:
an argument error is one line, `error: ...`, exit status 2, and `--help` prints at once,
before Keras or TensorFlow is loaded. `resolve_model_argument`, which reads the folder that
`--model` names, imports the library when called, after the parsing.
"""

import argparse
import os
from collections.abc import Callable
from typing import NoReturn

from keras_attention_cli.errors import fail

# Read by `keras_attention.core.quiet_import` when the library imports Keras: "1" hides
# TensorFlow's start-up lines. `set_quiet_import` is the one place that sets it.
QUIET_VARIABLE = "KERAS_ATTENTION_QUIET"
VERBOSE_HELP = "also print TensorFlow's start-up and C++ log lines (hidden by default)"


def set_quiet_import(verbose: bool) -> None:
    """Tells the library to import Keras without TensorFlow's start-up lines, unless `verbose`
    (`--verbose`) or the environment says otherwise (`KERAS_ATTENTION_QUIET=0`).

    An output setting, for the import that follows: `keras_attention.core.quiet_import`
    reads `KERAS_ATTENTION_QUIET` when the package first imports Keras.

    Args:
        verbose: show TensorFlow's start-up lines.
    """
    if verbose:
        os.environ[QUIET_VARIABLE] = "0"
    else:
        os.environ.setdefault(QUIET_VARIABLE, "1")


class ArgumentParser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` whose errors are one line, `error: ...`, without the usage,
    with the tools' common `--verbose` option.

    Parsing loads nothing: the tool imports the library after `parse_args` returns. Once the
    arguments parse, `parse_args` asks for the library's quiet import unless `--verbose` was
    given (`set_quiet_import`), so that the tool's output has no TensorFlow start-up lines.

    Example:

    >>> parser = ArgumentParser(prog="tool")
    >>> _ = parser.add_argument("--beams", type=int_at_least(1), default=4)
    >>> parser.parse_args(["--beams", "2"])
    Namespace(verbose=False, beams=2)
    >>> parser.parse_args(["--beams", "0"])  # "error: argument --beams: must be >= 1; got 0"
    Traceback (most recent call last):
    SystemExit: 2
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)

    def parse_args(self, *args, **kwargs) -> argparse.Namespace:
        parsed = super().parse_args(*args, **kwargs)
        set_quiet_import(parsed.verbose)
        return parsed

    def error(self, message: str) -> NoReturn:
        fail(message)


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse `type` for integers >= `minimum`; argparse names the argument."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer; got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}; got {value}")
        return value

    return parse


def non_negative_float(text: str) -> float:
    """An argparse `type` for finite numbers >= 0 (e.g. a length-penalty exponent)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number; got {text!r}") from None
    if not 0.0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0; got {text}")
    return value


def fraction(text: str) -> float:
    """An argparse `type` for numbers in [0, 1] (e.g. a sampling exponent, 0 for off)."""
    value = non_negative_float(text)
    if value > 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1]; got {text}")
    return value


def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds `--beam-size` and `--alpha`, defaulting to `None`: the run's own settings."""
    parser.add_argument(
        "--beam-size", type=int_at_least(1), default=None,
        help="with --run-dir; 1 = greedy (default: the run's, else 4)",
    )  # fmt: skip
    parser.add_argument(
        "--alpha", type=non_negative_float, default=None,
        help="with --run-dir: length penalty (default: the run's, else 0.6)",
    )  # fmt: skip


def add_model_arguments(
    parser: argparse.ArgumentParser, tool: str, run_help: str, several: bool = False
) -> None:
    """Adds the model to use, one of `--run-dir` and `--model` (required), with the old
    spelling `--saved-model` of `--model` (`old_spellings`); see `resolve_model_argument`.

    Args:
        parser: the tool's parser.
        tool: the tool's name, for its old spellings, e.g. `"translate"`.
        run_help: the help text of `--run-dir`.
        several: `--run-dir` may be repeated (a list: an ensemble's runs).
    """
    from keras_attention_cli.old_spellings import add_old_spellings

    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--run-dir", help=run_help, action="append" if several else "store")
    source.add_argument(
        "--model", help="a run folder, a preset folder or an exported version folder (export/1)"
    )
    add_old_spellings(source, tool, {"--model": "model"})


def resolve_model_argument(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Turns `--model PATH` into the option its folder stands for.

    `--model` takes a run folder, a preset folder or an exported version folder, told apart
    by their files (`keras_attention.models.preset_sources.folder_kind`): it sets
    `args.run_dir`, `args.preset_dir` or `args.saved_model` to PATH (`args.preset_dir` is
    `None` otherwise). Call it once `parse_args` has returned (it reads `config.json`).

    Args:
        parser: the tool's parser, whose `error` reports a PATH that is none of the three.
        args: the parsed arguments, with `model` (`None` when not given).
    """
    args.preset_dir = None
    for name in ("run_dir", "saved_model"):
        setattr(args, name, getattr(args, name, None))
    if getattr(args, "model", None) is None:
        return
    from keras_attention.models.preset_sources import PRESET, RUN, SAVED_MODEL, folder_kind

    try:
        kind = folder_kind(args.model)
    except (OSError, ValueError) as error:
        parser.error(f"--model: {error}")
    destination = {RUN: "run_dir", PRESET: "preset_dir", SAVED_MODEL: "saved_model"}[kind]
    setattr(args, destination, args.model)
