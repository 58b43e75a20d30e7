"""Stopping a run once its validation loss stops improving, in a way that survives a resume.

Keras's `EarlyStopping` keeps its count in memory: a run killed and resumed would start
counting again. `ValidationPatience` is told the losses of the epochs before a resume (the
run's `training_log.csv`, `losses_in_log`) and counts from them, so a resumed run stops at
the same epoch as one that was never stopped.
"""

import csv
import math
import os
from pathlib import Path

import keras


class ValidationPatience(keras.callbacks.Callback):
    """Stops training after `patience` epochs without a new lowest validation loss.

    Args:
        patience: epochs without improvement that end the run.
        monitor: the log entry to watch (lower is better).

    Example:

    >>> stopper = ValidationPatience(2)
    >>> stopper.resume_from([3.0, 2.5, 2.6])  # one epoch without improvement so far
    >>> stopper.epochs_without_improvement
    1
    """

    def __init__(self, patience: int, monitor: str = "val_loss"):
        super().__init__()
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 1:
            raise ValueError(f"patience must be a positive integer; got patience={patience!r}")
        self.patience = patience
        self.monitor = monitor
        self.losses: list[float] = []

    def resume_from(self, losses: list[float]) -> None:
        """The monitored values of the epochs already trained, in order."""
        self.losses = list(losses)

    @property
    def epochs_without_improvement(self) -> int:
        finite = [value if math.isfinite(value) else math.inf for value in self.losses]
        if not finite:
            return 0
        best = min(range(len(finite)), key=finite.__getitem__)
        return len(finite) - 1 - best

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        value = (logs or {}).get(self.monitor)
        self.losses.append(float(value) if value is not None else math.inf)
        if self.epochs_without_improvement >= self.patience:
            self.model.stop_training = True


def losses_in_log(path: str | os.PathLike, monitor: str = "val_loss") -> list[float]:
    """The `monitor` column of a CSV training log (`[]` if the file or column is missing)."""
    path = Path(path)
    if not path.is_file():
        return []
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    return [float(row[monitor]) for row in rows if row.get(monitor) not in (None, "")]
