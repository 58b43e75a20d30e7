"""Reading a parallel corpus from two text files, with errors that name the file and line."""

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


def read_parallel(
    source_path: str | os.PathLike, target_path: str | os.PathLike
) -> tuple[list[str], list[str]]:
    """Reads aligned sentences: line i of the source file translates line i of the target file.

    Pairs where either side is blank are dropped (they teach nothing); everything else is
    kept as it is.

    Returns:
        `(sources, targets)`, two lists of the same length.

    Raises:
        FileNotFoundError: if a file does not exist.
        ValueError: for an empty file, invalid UTF-8 (naming file and line), different line
            counts (naming both files and counts), or no pair left.
    """
    sources, targets = read_lines(source_path), read_lines(target_path)
    if len(sources) != len(targets):
        raise ValueError(
            f"parallel files differ in length: {source_path} has {len(sources)} lines, "
            f"{target_path} has {len(targets)}; line i of one must translate line i of the other"
        )
    pairs = [(s, t) for s, t in zip(sources, targets, strict=True) if s.strip() and t.strip()]
    if not pairs:
        raise ValueError(f"no non-blank sentence pair in {source_path} and {target_path}")
    return [s for s, _ in pairs], [t for _, t in pairs]
