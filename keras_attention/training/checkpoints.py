"""Checkpoint averaging (Section 6.1: the last 5 checkpoints for base models, 20 for big)."""

import io
import os
import re
from collections.abc import Sequence
from pathlib import Path

import h5py
import keras
import numpy as np

from keras_attention.core.file_checks import CorruptFileError
from keras_attention.core.weights_file import weights_bytes
from keras_attention.layers.legacy_weights import legacy_layout

# Where `save_weights` of a compiled model puts the optimizer's variables.
OPTIMIZER_GROUP = "optimizer"
# What h5py raises for a damaged file: `OSError` when it cannot be opened (truncated, not
# HDF5), `RuntimeError` or `KeyError` for damaged metadata inside, `ValueError` for bad data.
HDF5_READ_ERRORS = (OSError, RuntimeError, KeyError, ValueError)


def last_checkpoints(directory: str | os.PathLike, count: int) -> list[Path]:
    """The `count` most recent `epoch_NNN.weights.h5` files in `directory`, oldest first.

    "Most recent" is by epoch number (`epoch_1000` comes after `epoch_999`).

    Raises:
        ValueError: if `count` < 1 or the folder holds fewer checkpoints.
        FileNotFoundError: if the folder does not exist.
    """
    if count < 1:
        raise ValueError(f"count must be >= 1; got count={count}")
    if not Path(directory).is_dir():
        raise FileNotFoundError(f"no checkpoint folder {directory}")
    found = sorted(
        (int(match.group(1)), path)
        for path in Path(directory).glob("epoch_*.weights.h5")
        if (match := re.fullmatch(r"epoch_(\d+)\.weights\.h5", path.name))
    )
    if len(found) < count:
        raise ValueError(f"asked for the last {count} checkpoints; {directory} holds {len(found)}")
    return [path for _, path in found[-count:]]


def _layout(
    path: str | os.PathLike | io.BytesIO, read_data: bool = False
) -> dict[str, tuple[int, ...]]:
    """The shape of every model weight in a `.weights.h5` file, by its path in the file.

    The optimizer's variables, which a compiled model saves alongside (`optimizer/...`), are
    left out: they are no part of the architecture, and `load_weights` into a model without
    an optimizer skips them. With `read_data`, every dataset (the optimizer's too) is read
    as well, which finds damage inside a file whose layout still reads.
    """
    layout = {}

    def visit(name: str, item) -> None:
        if not isinstance(item, h5py.Dataset):
            return
        if read_data:
            item[()]
        if not name.startswith(OPTIMIZER_GROUP + "/"):
            layout[name] = item.shape

    with h5py.File(path, "r") as file:
        file.visititems(visit)
    return layout


def model_layout(model: keras.Model) -> dict[str, tuple[int, ...]]:
    """The layout of `model`'s `.weights.h5` file (see `weights_file_problem`)."""
    return _layout(io.BytesIO(weights_bytes(model)))


def weights_file_problem(
    path: str | os.PathLike, expected: dict[str, tuple[int, ...]], read_data: bool = False
) -> str | None:
    """What is wrong with the `.weights.h5` file `path` as the weights of a model whose
    layout is `expected` (`model_layout`), as words that follow its name; `None` if nothing.

    Args:
        path: an existing file.
        expected: the model's layout.
        read_data: also read every weight (see `_layout`).
    """
    try:
        found = _layout(path, read_data)
    except HDF5_READ_ERRORS as error:  # h5py's message does not name the file
        return f"is corrupt (not a readable HDF5 weights file): {error}"
    # Attention projections saved in their old layout load reshaped (`legacy_weights`).
    found = legacy_layout(found, expected)
    if found == expected:
        return None
    missing = sorted(expected.keys() - found.keys())
    extra = sorted(found.keys() - expected.keys())
    reshaped = sorted(k for k in expected.keys() & found.keys() if expected[k] != found[k])
    details = [
        f"{label} ({len(names)}): {names[0]}{', ...' if len(names) > 1 else ''}"
        for label, names in (("missing", missing), ("unexpected", extra))
        if names
    ] + [f"shape {found[k]} instead of {expected[k]} for {k}" for k in reshaped[:1]]
    return "does not match the model's architecture: " + "; ".join(details)


def check_layouts(model: keras.Model, paths: Sequence[str | os.PathLike]) -> None:
    """Checks that every checkpoint holds exactly `model`'s weights.

    `load_weights` alone is not enough: it silently ignores the weights of layers the model
    lacks (a deeper encoder, an untied embedding).

    Args:
        model: a built model.
        paths: `.weights.h5` files.

    Raises:
        FileNotFoundError: naming a missing checkpoint.
        CorruptFileError: naming a checkpoint that is corrupt (not a readable HDF5 file, e.g.
            one still being written) or whose weights differ from the model's in name or
            shape.
    """
    expected = model_layout(model)
    for path in paths:
        if not Path(path).is_file():
            raise FileNotFoundError(f"no checkpoint file {path}")
        problem = weights_file_problem(path, expected)
        if problem is not None:
            raise CorruptFileError(f"checkpoint {path} {problem}")


def load_weights_file(model: keras.Model, path: str | os.PathLike) -> None:
    """`model.load_weights(path)`, with errors that name the file.

    Call `check_layouts` first: once the file holds the model's weights by name and shape,
    a failure to read them means the file is damaged.

    Raises:
        ValueError: naming `path` and calling it corrupt if its weights cannot be read.
    """
    try:
        model.load_weights(str(path))
    except HDF5_READ_ERRORS as error:  # h5py's message does not name the file
        raise CorruptFileError(
            f"checkpoint {path} is corrupt (its weights cannot be read): {error}"
        ) from error


def average_checkpoints(model: keras.Model, paths: Sequence[str | os.PathLike]) -> keras.Model:
    """Sets `model`'s weights to the element-wise mean of the checkpoints' weights.

    The mean is accumulated in float64 and cast back to each weight's dtype.

    Args:
        model: a built model with the checkpoints' architecture.
        paths: `.weights.h5` files saved from that architecture.

    Returns:
        `model`, holding the averaged weights.

    Raises:
        ValueError: if `paths` is empty, or naming a checkpoint that is corrupt or does not
            hold exactly the model's weights.
        FileNotFoundError: naming a missing checkpoint.
    """
    if not paths:
        raise ValueError("paths must name at least one checkpoint")
    check_layouts(model, paths)
    total = None
    for path in paths:
        load_weights_file(model, path)
        weights = [np.asarray(w, dtype="float64") for w in model.get_weights()]
        total = weights if total is None else [t + w for t, w in zip(total, weights, strict=True)]
    dtypes = [np.asarray(w).dtype for w in model.get_weights()]
    model.set_weights([(t / len(paths)).astype(d) for t, d in zip(total, dtypes, strict=True)])
    return model
