"""What the command-line tools share: user errors as one line, `error: ...`, exit status 2.

A user error (a bad argument, a missing or corrupt file, undecodable text) is not a bug, so it
gets no traceback: the tool prints one line naming the argument or the file and exits
non-zero. Anything else still raises, with its traceback, because it is a bug.

A tool runs its `main` through `run_tool`, which ends it quietly when its output goes into a
closed pipe (`... | head -1`) and with one line when Ctrl-C or SIGTERM stop it.

The helpers here check what a tool will write before it does any work (`check_output_file`,
`check_output_dir`), read its text input with errors that name the file and line
(`read_input_lines`), and turn the errors of bad files into that one line (`user_errors`).
This module itself needs only the standard library (and `keras_attention.data.text_files`
for `read_input_lines`), but importing it runs `keras_attention/__init__.py`, which loads
Keras and TensorFlow unless the tool set `KERAS_ATTENTION_DEFER_IMPORT=1` first: then
`ArgumentParser` loads them once the arguments parse.
"""

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NoReturn

EXIT_USER_ERROR = 2
STDIN = "-"
STDIN_NAME = "<stdin>"


class UserError(Exception):
    """An error the user can fix; the message names the argument or file at fault."""


def fail(message: str) -> NoReturn:
    """Prints `error: message` on one line to stderr and exits with status 2."""
    text = " ".join(str(message).split())  # one line, whatever the message holds
    print(f"error: {text}", file=sys.stderr)
    sys.exit(EXIT_USER_ERROR)


# 128 + SIGPIPE, the status of a shell command that SIGPIPE ended (Python ignores SIGPIPE).
EXIT_BROKEN_PIPE = 141
# What a tool interrupted by Ctrl-C or SIGTERM leaves, unless it says otherwise (`run_tool`).
INTERRUPTED_STATE = "no file is left half-written (files are written atomically)"


class Interrupted(KeyboardInterrupt):
    """A signal that stops a tool as Ctrl-C does (SIGTERM), raised in the main thread.

    Attributes:
        signum: the signal's number.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def run_tool(main: Callable[[], object], interrupted: str = INTERRUPTED_STATE) -> NoReturn:
    """Runs a tool's `main` as a program; call it from the tool's `if __name__ == "__main__":`.

    - Output into a closed pipe (`tool ... | head -1`) ends the tool quietly, without a
      traceback or a message: stdout goes to `os.devnull` (as Python's documentation of
      SIGPIPE recommends) and the exit status is 141, as for a command that SIGPIPE ended.
    - SIGTERM stops the tool as Ctrl-C does (`Interrupted`, a `KeyboardInterrupt`, raised in
      the main thread, so that `finally` blocks run); either ends it with one line on stderr,
      `error: interrupted by SIGINT; <interrupted>`, and exit status 128 + the signal's
      number: 130 for SIGINT, 143 for SIGTERM. A second signal while it ends kills it.
    - A failure of the storage (a full disk, a read-only or forbidden folder, a broken
      device: `keras_attention.core.io_errors.storage_error_line`) ends it with one line
      naming the file and the cause, exit status 2, whatever wrote the file (Python, h5py or
      TensorFlow).
    - `main`'s own exit (`fail`, `sys.exit`) and its bugs (with their traceback) are kept.

    A signal that this process was started ignoring (a background job's SIGINT, `nohup`) stays
    ignored. Forked child processes that get SIGTERM end as they would without this handler.

    Args:
        main: the tool's `main`, called without arguments (it reads `sys.argv`).
        interrupted: what an interrupted run leaves, for the message, e.g. `"the run folder
            resumes with the same command"`.
    """
    _stop_on_sigterm()
    try:
        try:
            main()
        finally:
            sys.stdout.flush()  # a closed pipe found here, not at the interpreter's exit
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_BROKEN_PIPE)
    except KeyboardInterrupt as error:
        signum = getattr(error, "signum", signal.SIGINT)
        for stopping in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(stopping) is not signal.SIG_IGN:
                signal.signal(stopping, signal.SIG_DFL)
        print(f"error: interrupted by {signal.Signals(signum).name}; {interrupted}",
              file=sys.stderr)  # fmt: skip
        sys.exit(128 + signum)
    except Exception as error:
        message = storage_failure(error)
        if message is None:
            raise
        fail(message)
    sys.exit(0)


def _stop_on_sigterm() -> None:
    """SIGTERM raises `Interrupted` in this process (unless it is ignored)."""
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return
    tool_pid = os.getpid()

    def stop(signum: int, frame: object) -> None:
        if os.getpid() != tool_pid:  # a forked child (e.g. a worker of a process pool)
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        raise Interrupted(signum)

    signal.signal(signal.SIGTERM, stop)


VERBOSE_HELP = "also print TensorFlow's start-up and C++ log lines (hidden by default)"


class ArgumentParser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` whose errors are one line, `error: ...`, without the usage,
    with the tools' common `--verbose` option (read from `sys.argv` before the package is
    imported: see `keras_attention.core.quiet_import`).

    Once `parse_args` succeeds, it finishes loading the package (`keras_attention.load`),
    whose import a tool defers (`KERAS_ATTENTION_DEFER_IMPORT`): `--help` and argument errors
    exit before TensorFlow starts, and the tool's work finds Keras loaded, quietly.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)

    def parse_args(self, *args, **kwargs) -> argparse.Namespace:
        parsed = super().parse_args(*args, **kwargs)
        import keras_attention

        keras_attention.load()
        return parsed

    def error(self, message: str) -> NoReturn:
        fail(message)


@contextlib.contextmanager
def user_errors(*kinds: type[Exception]) -> Iterator[None]:
    """Reports the errors of the block that a user caused with `fail`: one line, status 2.

    Wrap only the calls that read or write the user's files: the library raises
    `FileNotFoundError`/`OSError` and `ValueError` naming the file (and calling it corrupt
    where it is) for those. Other errors, bugs, keep their traceback.

    Args:
        *kinds: the exception types to report (default: `OSError` and `ValueError`);
            `UserError` always is.

    Example:

    >>> from keras_attention.runs.files import load_run_model
    >>> with user_errors():
    ...     model, tokenizer = load_run_model("runs/translator")
    >>> with user_errors():  # prints "error: no folder runs/missing" on stderr
    ...     model, tokenizer = load_run_model("runs/missing")
    Traceback (most recent call last):
    SystemExit: 2
    """
    reported = (UserError, *(kinds or (OSError, ValueError)))
    try:
        yield
    except reported as error:
        fail(storage_failure(error) or str(error))


def storage_failure(error: BaseException) -> str | None:
    """The message of a storage failure (`core.io_errors.storage_error_line`, with what to do),
    or `None` if `error` is not one."""
    from keras_attention.core.io_errors import storage_error_line

    line = storage_error_line(error)
    if line is None:
        return None
    return f"{line}; nothing is half-written: free space (or fix permissions), run it again"


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


def _check_writable_folder(folder: Path, argument: str, path: str | os.PathLike) -> None:
    """Raises `UserError` unless `folder` is an existing folder this process may write in."""
    if not folder.exists():
        raise UserError(f"{argument} {path}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise UserError(f"{argument} {path}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"{argument} {path}: the folder {folder} is not writable")


def check_output_file(path: str | os.PathLike, argument: str) -> None:
    """Checks, before any work, that a file can be written at `path`.

    Its folder must exist and be writable, and `path` must not be a folder. An existing file
    is fine (it is replaced).

    Args:
        path: the file the tool will write.
        argument: the option that named it, e.g. `"--hypotheses"`, for the message.

    Raises:
        UserError: naming `argument`, `path` and what is wrong.
    """
    if Path(path).is_dir():
        raise UserError(f"{argument} {path}: is a folder; expected a file name")
    _check_writable_folder(Path(path).parent, argument, path)


def check_output_dir(path: str | os.PathLike, argument: str) -> None:
    """Checks, before any work, that a folder can be created or written at `path`.

    The folder may be missing (it is created, with its parents): its nearest existing
    ancestor must then be a writable folder.

    Args:
        path: the folder the tool will write in.
        argument: the option that named it, e.g. `"--export-dir"`, for the message.

    Raises:
        UserError: naming `argument`, `path` and what is wrong.
    """
    existing = Path(path)
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise UserError(f"{argument} {path}: {existing} is a file, not a folder")
    _check_writable_folder(existing, argument, path)


def read_input_lines(names: Sequence[str]) -> list[str]:
    """The lines of UTF-8 text files and/or stdin (`"-"`), without line endings, in order.

    Args:
        names: file paths; `"-"` reads stdin (as bytes, whatever the locale).

    Returns:
        Every line of every input, in order.

    Raises:
        UserError: naming a file that cannot be read, or the file (`<stdin>` for stdin) and
            line of text that is not valid UTF-8.
    """
    from keras_attention.data.text_files import decode_lines

    lines = []
    for name in names:
        try:
            if name == STDIN:
                lines += decode_lines(sys.stdin.buffer, STDIN_NAME)
                continue
            with open(name, "rb") as handle:
                lines += decode_lines(handle, name)
        except IsADirectoryError:
            raise UserError(f"input {name} is a folder; expected a text file") from None
        except FileNotFoundError:
            raise UserError(f"input file {name} does not exist") from None
        except OSError as error:
            raise UserError(f"cannot read the input file {name}: {error.strerror}") from None
        except ValueError as error:
            raise UserError(str(error)) from None
    return lines


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
    if getattr(args, "model", None) is None:
        return
    from keras_attention.models.preset_sources import PRESET, RUN, SAVED_MODEL, folder_kind

    try:
        kind = folder_kind(args.model)
    except (OSError, ValueError) as error:
        parser.error(f"--model: {error}")
    destination = {RUN: "run_dir", PRESET: "preset_dir", SAVED_MODEL: "saved_model"}[kind]
    setattr(args, destination, args.model)
