"""Stopping a run whose loss diverges, before any callback saves what it produced.

`DivergenceCheck` raises `TrainingDivergedError` when:

- the training loss that Keras logs after a batch (the mean of the epoch's batches so far) or
  at an epoch's end is not a finite number (NaN, an infinity);
- or it is above `factor` (10 by default) times ln(V), V being the size of the vocabulary
  predicted (the model's `output_vocabulary_size`, or the `vocabulary_size` given);
- the validation loss at an epoch's end is not a finite number;
- the weights are not all finite numbers at an epoch's end, or, with
  `check_weights_every=N`, every N batches (where a step backup is written).

ln(V) is the cross-entropy of a uniform prediction over V tokens, with or without label
smoothing: what an initialised model scores (within a few percent), and a model that learns
only goes below it. Ten times it is far above anything a working run logs, at any point, and
far below the losses of a diverging one (which reach hundreds of thousands, or NaN). The limit
depends on the vocabulary alone, not on losses seen by this process: a run killed and resumed
from its backup, in another process, applies the same rule. Without a vocabulary size (a model
that is not a translator) only non-finite values count.

Keras calls the callbacks of `fit` in their list's order and does not call `on_train_end`
when one raises. Placed first (`training_callbacks` does), the check therefore stops `fit`
before a later callback sees the bad batch or epoch: no step backup, epoch checkpoint, best
checkpoint or log row of it is written, and the backup of the last good state stays.
"""

import math
from collections.abc import Callable

import keras

from keras_attention.core.checks import check_int_at_least

__all__ = ["DEFAULT_FACTOR", "DivergenceCheck", "TrainingDivergedError"]

DEFAULT_FACTOR = 10.0


class TrainingDivergedError(ValueError):
    """Training diverged: its loss (or weights) stopped being a number, or exploded.

    Attributes:
        epoch: the epoch (1-based).
        batch: the batch of that epoch (1-based) after which it was found.
        loss: the loss logged then (NaN when none was).
        reason: what was wrong, e.g. "the loss is not a finite number".
    """

    def __init__(self, epoch: int, batch: int, loss: float, reason: str):
        self.epoch, self.batch, self.loss, self.reason = epoch, batch, loss, reason
        super().__init__(
            f"{self.summary}: {reason}; nothing of it was saved. Try a lower learning rate or "
            "a longer warm-up, and start the run again from scratch"
        )

    @property
    def summary(self) -> str:
        """`training diverged at epoch E, batch B (loss L)`."""
        return f"training diverged at epoch {self.epoch}, batch {self.batch} (loss {self.loss:.6g})"


class DivergenceCheck(keras.callbacks.Callback):
    """Raises `TrainingDivergedError` when training diverges (the rule: see the module).

    Place it first among the callbacks of `fit`, so that nothing is saved of a diverged step.

    Args:
        vocabulary_size: V of the loss limit `factor * ln(V)`; default: the model's
            `output_vocabulary_size` (a `Transformer`'s), else no limit (only non-finite
            losses count).
        factor: the limit in losses of a uniform prediction.
        check_weights_every: also check that the weights are finite every this many batches
            (those of the step backups), besides at every epoch's end.
        batch_offset: how many batches of the current epoch were trained before this `fit`
            (a resumed epoch), read after each batch, for the batch numbers of the messages.

    Example:

    >>> from keras_attention.runs.train import load_run
    >>> model, _ = load_run("runs/translator")
    >>> history = model.fit(train_data, epochs=2, callbacks=[DivergenceCheck()], verbose=0)
    >>> len(history.history["loss"])  # no divergence: both epochs trained
    2
    """

    def __init__(
        self,
        vocabulary_size: int | None = None,
        factor: float = DEFAULT_FACTOR,
        check_weights_every: int | None = None,
        batch_offset: Callable[[], int] | None = None,
    ):
        super().__init__()
        if vocabulary_size is not None:
            check_int_at_least("vocabulary_size", vocabulary_size, 2)
        if check_weights_every is not None:
            check_int_at_least("check_weights_every", check_weights_every, 1)
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not factor > 1:
            raise ValueError(f"factor must be a number > 1; got factor={factor!r}")
        self.vocabulary_size = vocabulary_size
        self.factor = factor
        self.check_weights_every = check_weights_every
        self.batch_offset = batch_offset
        self.max_loss = None  # set as training begins
        self._size = None  # the vocabulary size of `max_loss`
        self._epoch = 0  # the current epoch, 0-based
        self._done = 0  # batches of the current epoch trained
        self._since_check = 0  # batches since the weights were last checked
        self._loss = math.nan  # the last loss logged

    def on_train_begin(self, logs=None):
        size = self.vocabulary_size or getattr(self.model, "output_vocabulary_size", None)
        self._size = size
        self.max_loss = None if size is None else self.factor * math.log(size)
        self._since_check = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch, self._done = epoch, None

    def on_train_batch_end(self, batch, logs=None):
        offset = self.batch_offset() if self.batch_offset is not None else 0
        done = offset + batch + 1  # `batch` is the last of the step's batches
        self._since_check += done - (offset if self._done is None else self._done)
        self._done = done
        self._check_loss(logs, "loss", self.max_loss)
        steps = self.params.get("steps") if self.params else None
        epoch_ends = steps is not None and batch + 1 >= steps  # checked at its end
        every = self.check_weights_every
        if every is not None and self._since_check >= every and not epoch_ends:
            self._check_weights()

    def on_epoch_end(self, epoch, logs=None):
        if self._done is None:  # no batch of it in this `fit`
            self._done = self.batch_offset() if self.batch_offset is not None else 0
        self._check_loss(logs, "loss", self.max_loss)
        self._check_loss(logs, "val_loss", None)
        self._check_weights()

    def _check_loss(self, logs: dict | None, name: str, limit: float | None) -> None:
        """Raises `TrainingDivergedError` if `logs[name]` is not finite or is above `limit`."""
        if not logs or name not in logs:
            return
        try:
            value = float(logs[name])
        except (TypeError, ValueError):
            return
        if name == "loss":
            self._loss = value
        if not math.isfinite(value):
            self._diverged(f"the {_described(name)} is {value}, not a finite number", value)
        if limit is not None and value > limit:
            self._diverged(
                f"the {_described(name)} is above {self.factor:g} x ln({self._size}) = "
                f"{limit:.4g}, ln({self._size}) being the loss of a uniform prediction",
                value,
            )

    def _check_weights(self) -> None:
        """Raises `TrainingDivergedError` if a weight is not a finite number."""
        self._since_check = 0
        ops = keras.ops
        flags = [ops.all(ops.isfinite(v)) for v in self.model.trainable_weights]
        if flags and not bool(ops.convert_to_numpy(ops.all(ops.stack(flags)))):
            self._diverged("some weights are not finite numbers", self._loss)

    def _diverged(self, reason: str, loss: float) -> None:
        raise TrainingDivergedError(self._epoch + 1, self._done or 0, loss, reason)


def _described(name: str) -> str:
    return "validation loss" if name == "val_loss" else "training loss"
