"""The files of a tool: the paths it will write, checked before any work, and its input text.

This module needs only the standard library; `read_input_lines` imports
`keras_attention.data.text_files` when called, past the tool's arguments.
"""

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from keras_attention_cli.errors import UserError

STDIN = "-"
STDIN_NAME = "<stdin>"


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
        argument: the option that named it, e.g. `"--output"`, for the message.

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
        argument: the option that named it, e.g. `"--output"`, for the message.

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
