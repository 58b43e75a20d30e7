"""Checkpoint averaging (Section 6.1: the last 5 checkpoints for base models, 20 for big)."""

import os
import re
from collections.abc import Sequence
from pathlib import Path

import keras
import numpy as np


def last_checkpoints(directory: str | os.PathLike, count: int) -> list[Path]:
    """The `count` most recent `epoch_NNN.weights.h5` files in `directory`, oldest first.

    Raises:
        ValueError: if `count` < 1 or the folder holds fewer checkpoints.
    """
    if count < 1:
        raise ValueError(f"count must be >= 1; got count={count}")
    found = sorted(
        (int(match.group(1)), path)
        for path in Path(directory).glob("epoch_*.weights.h5")
        if (match := re.fullmatch(r"epoch_(\d+)\.weights\.h5", path.name))
    )
    if len(found) < count:
        raise ValueError(f"asked for the last {count} checkpoints; {directory} holds {len(found)}")
    return [path for _, path in found[-count:]]


def average_checkpoints(model: keras.Model, paths: Sequence[str | os.PathLike]) -> keras.Model:
    """Sets `model`'s weights to the element-wise mean of the checkpoints' weights.

    The mean is accumulated in float64 and cast back to each weight's dtype.

    Args:
        model: a built model with the checkpoints' architecture.
        paths: `.weights.h5` files saved from that architecture.

    Returns:
        `model`, holding the averaged weights.
    """
    if not paths:
        raise ValueError("paths must name at least one checkpoint")
    total = None
    for path in paths:
        model.load_weights(str(path))
        weights = [np.asarray(w, dtype="float64") for w in model.get_weights()]
        total = weights if total is None else [t + w for t, w in zip(total, weights, strict=True)]
    dtypes = [np.asarray(w).dtype for w in model.get_weights()]
    model.set_weights([(t / len(paths)).astype(d) for t, d in zip(total, dtypes, strict=True)])
    return model
