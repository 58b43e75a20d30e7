"""Weights files that a full disk cannot turn into a crash.

`model.save_weights(path)` lets HDF5 write the file itself; when a write fails half-way (a
full disk, a quota, a file size limit), h5py cannot close the file and the process dies with a
segmentation fault inside `save_weights`. Here the `.weights.h5` file is built in memory
(Keras accepts an `io.BytesIO` as the file), then written by Python: a failed write is an
`OSError` naming the file, and the file on disk is either the old one or the new one
(`write_bytes_atomically`). The cost is one copy of the weights in memory while they are
written.
"""

import io
import os
from pathlib import Path

from keras_attention.core.atomic_files import write_bytes_atomically


class _InMemoryWeightsFile(io.BytesIO):
    """An in-memory file whose name ends with `.weights.h5`, as Keras asks of a weights file."""

    def __str__(self) -> str:
        return "in-memory.weights.h5"


def weights_bytes(model) -> bytes:
    """The bytes of the `.weights.h5` file of `model` (a built `keras.Model`).

    Example:

    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    >>> data = weights_bytes(model)
    >>> data[:8] == b"\\x89HDF\\r\\n\\x1a\\n"
    True
    """
    buffer = _InMemoryWeightsFile()
    model.save_weights(buffer)
    return buffer.getvalue()


def load_weights_bytes(model, data: bytes) -> None:
    """Loads the weights of a `.weights.h5` file's bytes (`weights_bytes`) into `model`."""
    model.load_weights(_InMemoryWeightsFile(data))


def save_weights_atomically(model, path: str | os.PathLike) -> Path:
    """Writes `model`'s weights to `path` (a `.weights.h5` file) atomically; returns the path.

    Raises:
        OSError: naming `path` if it cannot be written (its old content is then kept).
    """
    return write_bytes_atomically(path, weights_bytes(model))


def write_weights_file(model, path: str | os.PathLike) -> None:
    """Writes `model`'s weights to `path` in place (not atomically: for a staging name that
    the caller renames); a partly written file is removed.

    Raises:
        OSError: naming `path` if it cannot be written.
    """
    data = weights_bytes(model)
    try:
        Path(path).write_bytes(data)
    except OSError as error:
        Path(path).unlink(missing_ok=True)
        raise OSError(error.errno, error.strerror, str(path)) from error
