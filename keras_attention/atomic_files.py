"""Writing files so that a reader, or a run killed half-way, never sees a partial one.

Every writer here produces the new content under a temporary name in the destination's
folder, then renames it over the destination (`os.replace`, atomic on POSIX and Windows): the
file is either the old one or the complete new one, never a prefix of it.
"""

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yields a temporary path beside `path`; renames it onto `path` if the block succeeds.

    The temporary name ends with `suffix` (or `path`'s own suffixes when empty), for writers
    that choose the format from the extension (`model.save`, `save_weights`). If the block
    raises, the temporary file is removed and `path` is left as it was.

    Example:

    >>> with atomic_path("run/checkpoints/epoch_003.weights.h5") as tmp:
    ...     model.save_weights(tmp)
    """
    path = Path(path)
    suffix = suffix or "".join(path.suffixes)
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(handle)
    os.remove(name)  # writers such as h5py refuse some existing files; they create it
    try:
        yield Path(name)
        os.replace(name, path)
    finally:
        if os.path.exists(name):
            os.remove(name)


def write_text_atomically(path: str | os.PathLike, text: str) -> None:
    """Writes `text` (UTF-8) to `path` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json_atomically(path: str | os.PathLike, data: object) -> None:
    """Writes `data` as indented JSON to `path` atomically."""
    write_text_atomically(path, json.dumps(data, indent=2) + "\n")
