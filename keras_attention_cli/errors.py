"""User errors as one line, `error: ...`, exit status 2, and how a tool's `main` runs.

A user error (a bad argument, a missing or corrupt file, undecodable text) is not a bug, so it
gets no traceback: the tool prints one line naming the argument or the file and exits
non-zero. Anything else still raises, with its traceback, because it is a bug.

A tool's `main` runs its work through `run_command`, which ends it quietly when its output
goes into a closed pipe (`... | head -1`) and with one line when Ctrl-C or SIGTERM stop it.
This module needs only the standard library; `storage_failure` imports
`keras_attention.core.io_errors` when a tool fails, past its arguments.
"""

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import NoReturn

EXIT_USER_ERROR = 2


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


def run_command(command: Callable[[], object], interrupted: str = INTERRUPTED_STATE) -> int:
    """Runs a tool's work as a command and returns its exit status: the body of every
    `keras_attention_cli.commands.<tool>.main`, which a console script passes to `sys.exit`.

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
    - The command's own exit (`fail`, `sys.exit`) and its bugs (with their traceback) are
      kept; a command that returns gives status 0.

    A signal that this process was started ignoring (a background job's SIGINT, `nohup`) stays
    ignored. Forked child processes that get SIGTERM end as they would without this handler.
    The SIGTERM handler is the command's only: the previous one is back once it returns.

    Args:
        command: the tool's work, called without arguments.
        interrupted: what an interrupted run leaves, for the message, e.g. `"the run folder
            resumes with the same command"`.

    Returns:
        The exit status: 0, 141 (a closed pipe) or 128 + a signal's number.

    Example:

    >>> run_command(lambda: print("done"))
    done
    0
    """
    warning = global_jit_warning(os.environ)
    if warning is not None:
        print(warning, file=sys.stderr)
    previous = _stop_on_sigterm()
    try:
        try:
            try:
                command()
            finally:
                sys.stdout.flush()  # a closed pipe found here, not at the interpreter's exit
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_BROKEN_PIPE
        except KeyboardInterrupt as error:
            signum = getattr(error, "signum", signal.SIGINT)
            for stopping in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(stopping) is not signal.SIG_IGN:
                    signal.signal(stopping, signal.SIG_DFL)
            print(f"error: interrupted by {signal.Signals(signum).name}; {interrupted}",
                  file=sys.stderr)  # fmt: skip
            previous = None  # a second signal kills the process
            return 128 + signum
        except Exception as error:
            message = storage_failure(error)
            if message is None:
                raise
            fail(message)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return 0


def global_jit_warning(environ: Mapping[str, str]) -> str | None:
    """The one-line warning a tool prints when `TF_XLA_FLAGS` turns on TensorFlow's global
    CPU auto-clustering (`--tf_xla_cpu_global_jit`), else `None`. Under it, TensorFlow
    compiles parts of `tf.data` and string-op graphs with XLA and gets them wrong: measured
    with TensorFlow 2.21, a segmentation fault and an abort in `tf.data` iterators, "Ragged
    splits must be sorted" in a batching map, and a failed tf2xla conversion of the recaser's
    graph (`docs/development.md`). XLA for training is `--jit`.

    Example:

    >>> print(global_jit_warning({"TF_XLA_FLAGS": "--tf_xla_cpu_global_jit"}))
    warning: TF_XLA_FLAGS turns on TensorFlow's global CPU auto-clustering ...
    >>> global_jit_warning({}) is None
    True
    """
    flags = environ.get("TF_XLA_FLAGS", "")
    if "--tf_xla_cpu_global_jit" not in flags.split() or "--tf_xla_auto_jit=0" in flags.split():
        return None
    return (
        "warning: TF_XLA_FLAGS turns on TensorFlow's global CPU auto-clustering "
        "(--tf_xla_cpu_global_jit), under which tf.data pipelines and string ops fail "
        "(crashes, errors); unset it, and use --jit for XLA training"
    )


def run_tool(main: Callable[[], object], interrupted: str = INTERRUPTED_STATE) -> NoReturn:
    """Runs `main` as a program (`run_command`) and exits with its status.

    Args:
        main: the tool's work, called without arguments (it reads `sys.argv`).
        interrupted: what an interrupted run leaves, for the message.
    """
    sys.exit(run_command(main, interrupted))


def _stop_on_sigterm() -> object:
    """SIGTERM raises `Interrupted` in this process (unless it is ignored, handled already or
    this is not the main thread); returns the handler it replaced (`None`: none replaced)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.getsignal(signal.SIGTERM)
    if previous is not signal.SIG_DFL:
        return None
    tool_pid = os.getpid()

    def stop(signum: int, frame: object) -> None:
        if os.getpid() != tool_pid:  # a forked child (e.g. a worker of a process pool)
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        raise Interrupted(signum)

    signal.signal(signal.SIGTERM, stop)
    return previous


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
