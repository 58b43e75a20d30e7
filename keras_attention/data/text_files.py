"""Reading UTF-8 text lines, with errors that name the file (or stdin) and the line.

Parallel corpora are read by `data.streaming` (`parallel_text`, `read_parallel`)."""

import os
from collections.abc import Iterable, Iterator
from pathlib import Path


def decode_lines(raw_lines: Iterable[bytes], name: str) -> Iterator[str]:
    """Decodes lines of UTF-8 bytes, without their line endings, one at a time.

    Args:
        raw_lines: the lines as bytes, e.g. a file opened in binary mode or `sys.stdin.buffer`.
        name: what the lines come from, for the error message (a path, or `"<stdin>"`).

    Yields:
        Each line as text, without its line ending (LF or CRLF).

    Raises:
        ValueError: naming `name` and the line number (from 1) of a line that is not valid
            UTF-8, as `name:line: not valid UTF-8 (...)`.
    """
    for number, raw in enumerate(raw_lines, start=1):
        try:
            text = raw.decode("utf-8")
            # Only the line's own ending (LF or CRLF): a CR inside the line is data.
            yield text[:-2] if text.endswith("\r\n") else text.removesuffix("\n")
        except UnicodeDecodeError as error:
            raise ValueError(
                f"{name}:{number}: not valid UTF-8 ({error.reason} at byte {error.start})"
            ) from error


def read_lines(path: str | os.PathLike) -> list[str]:
    """The lines of a UTF-8 text file, without line endings.

    Raises:
        FileNotFoundError: if `path` does not exist.
        ValueError: if the file is empty, or a line is not valid UTF-8 (naming file and line).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"corpus file not found: {path}")
    with path.open("rb") as handle:
        lines = list(decode_lines(handle, str(path)))
    if not lines:
        raise ValueError(f"corpus file is empty: {path}")
    return lines
