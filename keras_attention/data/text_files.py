"""Reading UTF-8 text lines, plain or gzip, with errors that name the file (or stdin) and the
line, or the file and its damage.

A UTF-8 byte-order mark (U+FEFF) that starts a file's first line, as some editors write, is
no part of the text: every reader drops it, so that a sentence is the same with or without
it (in a validation file, a tokenizer's sample, a reference). A gzip file cut short or
corrupt raises `CorruptFileError` naming it (`gzip_errors`). Parallel corpora are read by
`data.streaming` (`parallel_text`, `read_parallel`), which does the same in `tf.data`.
"""

import contextlib
import gzip
import os
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from keras_attention.core.file_checks import CorruptFileError

BYTE_ORDER_MARK = "\ufeff"
_READ_SIZE = 1 << 20  # bytes of a gzip file decompressed at once by `check_gzip`


def decode_lines(raw_lines: Iterable[bytes], name: str) -> Iterator[str]:
    """Decodes lines of UTF-8 bytes, without their line endings, one at a time.

    A byte-order mark that starts the first line is dropped (later, U+FEFF is text).

    Args:
        raw_lines: the lines as bytes, e.g. a file opened in binary mode or `sys.stdin.buffer`.
        name: what the lines come from, for the error message (a path, or `"<stdin>"`).

    Yields:
        Each line as text, without its line ending (LF or CRLF).

    Raises:
        ValueError: naming `name` and the line number (from 1) of a line that is not valid
            UTF-8, as `name:line: not valid UTF-8 (...)`.

    Example:

    >>> list(decode_lines([b"\\xef\\xbb\\xbfone\\r\\n", b"two"], "notes.txt"))
    ['one', 'two']
    """
    for number, raw in enumerate(raw_lines, start=1):
        text = decode_line(raw, name, number)
        # Only the line's own ending (LF or CRLF): a CR inside the line is data.
        yield text[:-2] if text.endswith("\r\n") else text.removesuffix("\n")


def decode_line(raw: bytes, name: str, number: int) -> str:
    """Line `number` (from 1) of `name` as text, its line ending kept; the first line
    without a byte-order mark that starts it.

    Args:
        raw: the line as bytes.
        name: what the line comes from, for the error message (a path, or `"<stdin>"`).
        number: the line's number, from 1.

    Raises:
        ValueError: naming `name` and `number` if the line is not valid UTF-8, as
            `name:line: not valid UTF-8 (...)`.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{name}:{number}: not valid UTF-8 ({error.reason} at byte {error.start})"
        ) from error
    return text.removeprefix(BYTE_ORDER_MARK) if number == 1 else text


@contextlib.contextmanager
def gzip_errors(path: str | os.PathLike) -> Iterator[None]:
    """Raises the errors of reading the gzip file `path` inside the block as one
    `CorruptFileError` naming it: truncated (Python's `EOFError`), or corrupt (`zlib.error`,
    `gzip.BadGzipFile`: bad data, a wrong checksum, not gzip at all).

    Args:
        path: the gzip file read in the block.

    Raises:
        CorruptFileError: `"PATH is damaged: a truncated gzip file ..."`, `"... a corrupt
            gzip file (...)"` or `"... not a gzip file ..."`.
    """
    try:
        yield
    except EOFError as error:
        raise CorruptFileError(
            f"{path} is damaged: a truncated gzip file (it ends before its compressed data "
            "does: cut short while written, copied or downloaded?)"
        ) from error
    except (zlib.error, gzip.BadGzipFile) as error:
        detail = str(error)
        if detail.startswith("Not a gzipped file"):
            raise CorruptFileError(
                f"{path} is damaged: not a gzip file, though its name ends in .gz ({detail})"
            ) from error
        raise CorruptFileError(f"{path} is damaged: a corrupt gzip file ({detail})") from error


def file_lines(path: str | os.PathLike) -> Iterator[bytes]:
    """The lines of a text file as bytes, with their line endings: gzip if its name ends in
    `.gz`, else plain.

    Raises:
        FileNotFoundError: if `path` does not exist.
        CorruptFileError: naming a gzip file that is truncated or corrupt (`gzip_errors`).
    """
    if not str(path).endswith(".gz"):
        with open(path, "rb") as handle:
            yield from handle
        return
    with gzip_errors(path), gzip.open(path, "rb") as handle:
        yield from handle


def check_gzip(path: str | os.PathLike) -> None:
    """Reads the gzip file `path` through (a pass of decompression, nothing kept), for a
    reader that cannot tell a damaged file itself: TensorFlow's reads a truncated file as a
    shorter one.

    Raises:
        CorruptFileError: naming `path` if it is truncated or corrupt (`gzip_errors`).
    """
    with gzip_errors(path), gzip.open(path, "rb") as handle:
        while handle.read(_READ_SIZE):
            pass


def read_lines(path: str | os.PathLike) -> list[str]:
    """The lines of a UTF-8 text file (plain, or gzip by its `.gz` suffix), without line
    endings or a byte-order mark.

    Raises:
        FileNotFoundError: if `path` does not exist.
        ValueError: if the file is empty, or a line is not valid UTF-8 (naming file and line).
        CorruptFileError: naming a gzip file that is truncated or corrupt.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"corpus file not found: {path}")
    lines = list(decode_lines(file_lines(path), str(path)))
    if not lines:
        raise ValueError(f"corpus file is empty: {path}")
    return lines
