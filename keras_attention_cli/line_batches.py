"""Input text read as it comes, in batches: what `translate` answers one batch at a time.

A batch ends when it holds `max_lines` lines or when no further whole line can be read
without waiting: a file (or a pipe that is ahead) gives full batches, a person typing at a
terminal or a program writing a line into a pipe held open gets its line answered at once.
Memory stays bounded by a batch and one read, whatever the input's size. Standard library
only; `line_batches` imports `keras_attention.data.text_files` when called.
"""

import contextlib
import os
import select
import sys
from collections import deque
from collections.abc import Iterator, Sequence
from typing import BinaryIO

from keras_attention_cli.errors import UserError
from keras_attention_cli.files import STDIN, STDIN_NAME

READ_SIZE = 1 << 16  # bytes per read: larger than a buffered reader's own buffer


def readable_now(handle: BinaryIO) -> bool:
    """Whether reading `handle` would not wait (always true for a file, or a stream without a
    file descriptor, such as `io.BytesIO`)."""
    try:
        descriptor = handle.fileno()
    except (OSError, ValueError, AttributeError):
        return True
    return bool(select.select([descriptor], [], [], 0)[0])


class RawLines:
    """The lines of a binary stream (with their `\\n`), read a block at a time as it comes.

    Iterating waits for the next line; `has_line_now` says whether it would not wait.

    Example:

    >>> import io
    >>> lines = RawLines(io.BytesIO(b"one\\ntwo"))
    >>> lines.has_line_now(), list(lines)
    (True, [b'one\\n', b'two'])
    """

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.lines: deque[bytes] = deque()
        self.partial = b""
        self.ended = False

    def _read(self) -> None:
        """Reads what the stream has (waiting for something, or for its end)."""
        read = getattr(self.handle, "read1", self.handle.read)
        data = read(READ_SIZE)
        if not data:
            self.ended = True
            if self.partial:
                self.lines.append(self.partial)
                self.partial = b""
            return
        parts = (self.partial + data).split(b"\n")
        self.partial = parts.pop()
        self.lines.extend(part + b"\n" for part in parts)

    def has_line_now(self) -> bool:
        """Whether the next step of the iteration (a line, or the end) needs no waiting."""
        while not self.lines and not self.ended and readable_now(self.handle):
            self._read()
        return bool(self.lines) or self.ended

    def __iter__(self) -> Iterator[bytes]:
        while True:
            while not self.lines and not self.ended:
                self._read()
            if not self.lines:
                return
            yield self.lines.popleft()


def check_inputs(names: Sequence[str]) -> None:
    """Checks, before any work, that every input file exists and is a readable file.

    Raises:
        UserError: naming the file.
    """
    for name in names:
        if name == STDIN:
            continue
        if os.path.isdir(name):
            raise UserError(f"input {name} is a folder; expected a text file")
        if not os.path.exists(name):
            raise UserError(f"input file {name} does not exist")
        if not os.access(name, os.R_OK):
            raise UserError(f"cannot read the input file {name}: permission denied")


@contextlib.contextmanager
def _opened(name: str) -> Iterator[BinaryIO]:
    if name == STDIN:
        yield sys.stdin.buffer
        return
    try:
        handle = open(name, "rb")  # noqa: SIM115 (closed below)
    except OSError as error:
        raise UserError(f"cannot read the input file {name}: {error.strerror}") from None
    with handle:
        yield handle


def line_batches(names: Sequence[str], max_lines: int) -> Iterator[list[str]]:
    """The lines of UTF-8 text files and/or stdin (`"-"`), in order, in batches read as the
    input comes (see the module's docstring).

    Args:
        names: file paths; `"-"` reads stdin (as bytes, whatever the locale).
        max_lines: the most lines in a batch.

    Yields:
        Lists of 1 to `max_lines` lines, without their line endings.

    Raises:
        UserError: naming a file that cannot be read, or the file (`<stdin>` for stdin) and
            line that is not valid UTF-8.

    Example:

    >>> import io, sys
    >>> sys.stdin = io.TextIOWrapper(io.BytesIO(b"a\\nb\\nc\\n"))
    >>> list(line_batches(["-"], 2))
    [['a', 'b'], ['c']]
    >>> sys.stdin = sys.__stdin__
    """
    from keras_attention.data.text_files import decode_lines

    for name in names:
        with _opened(name) as handle:
            raw = RawLines(handle)
            batch: list[str] = []
            try:
                for line in decode_lines(raw, STDIN_NAME if name == STDIN else name):
                    batch.append(line)
                    if len(batch) >= max_lines or not raw.has_line_now():
                        yield batch
                        batch = []
            except ValueError as error:  # not UTF-8, naming the file and line
                raise UserError(str(error)) from None
            except OSError as error:
                raise UserError(f"cannot read the input file {name}: {error.strerror}") from None
            if batch:
                yield batch
