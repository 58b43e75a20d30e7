"""`fit_resumable`: `model.fit` that resumes a run killed mid-epoch where its backup stands."""

from collections.abc import Sequence

import keras

from keras_attention.training.backup import ClusterBackupAndRestore


def fit_resumable(
    model: keras.Model,
    train_data,
    epochs: int,
    callbacks: Sequence[keras.callbacks.Callback] | None = None,
    **fit_kwargs,
) -> keras.callbacks.History:
    """`model.fit(train_data, epochs=epochs, callbacks=callbacks, **fit_kwargs)`, resuming a
    run killed in the middle of an epoch at the batch its backup was made.

    The backup is that of the `ClusterBackupAndRestore` among `callbacks`. When it says that
    the first B batches of epoch E were trained (it backs up every N steps: `save_freq=N`),
    this restores the weights and the optimizer's state, trains the rest of epoch E on
    `train_data.skip(B)` with a first `fit`, then the remaining epochs with a second one:
    the run makes as many optimizer steps as an uninterrupted one and loses at most N of
    them. Otherwise (no backup, a backup made at an epoch end, no `ClusterBackupAndRestore`)
    it is `model.fit` itself.

    After a restart, epoch E's batches come from a new pass over `train_data`: a dataset
    that reshuffles every epoch shuffles afresh, so the remaining batches are not exactly
    those the killed run had left (each batch of a non-shuffled dataset is trained once).
    The metrics logged for epoch E cover only its batches trained after the restart.

    The callbacks see the two `fit` calls (`on_train_begin` and `on_train_end` twice) and
    each epoch once: the first call's logs and `params` give its real epoch numbers and the
    run's `epochs`, and `params["steps"]` is the number of batches that call trains per
    epoch (the rest of epoch E in the first). Run it outside `strategy.scope()`, with the
    model built and compiled inside, as `model.fit`.

    Args:
        model: a built and compiled model.
        train_data: a `tf.data.Dataset` yielding one epoch's batches (with a known
            cardinality, or `steps_per_epoch` in `fit_kwargs`).
        epochs: the number of epochs of the whole run.
        callbacks: the callbacks of `fit`, with at most one `ClusterBackupAndRestore`.
        **fit_kwargs: the other arguments of `model.fit` (`validation_data`, `verbose`,
            ...); `initial_epoch` only counts without a backup, as in `model.fit`.

    Returns:
        The `History` of the epochs trained, over both `fit` calls.

    Raises:
        TypeError: the run must continue mid-epoch and `train_data` is not a
            `tf.data.Dataset`.
        ValueError: more than one `ClusterBackupAndRestore`, or the backup counts at least as
            many batches as an epoch has.

    Example:

    >>> callbacks = training_callbacks("run", backup_every_steps=500)
    >>> history = fit_resumable(model, train_data, epochs=10, callbacks=callbacks,
    ...                         validation_data=val_data)
    """
    callbacks = list(callbacks or [])
    backups = [callback for callback in callbacks if isinstance(callback, ClusterBackupAndRestore)]
    if len(backups) > 1:
        raise ValueError(f"callbacks must hold at most one ClusterBackupAndRestore; got {backups}")
    if not backups:
        return model.fit(train_data, epochs=epochs, callbacks=callbacks, **fit_kwargs)
    backup = backups[0]
    backup.set_model(model)
    epoch, batches = backup.restore()  # `fit` then leaves the restored state alone
    if batches == 0 or epoch >= epochs:
        return model.fit(train_data, epochs=epochs, callbacks=callbacks, **fit_kwargs)

    fit_kwargs.pop("initial_epoch", None)
    first_kwargs = dict(fit_kwargs)
    steps = _cardinality(train_data)
    if fit_kwargs.get("steps_per_epoch") is not None:
        steps = fit_kwargs["steps_per_epoch"]
        first_kwargs["steps_per_epoch"] = steps - batches
    if steps is not None and batches >= steps:
        raise ValueError(
            f"the backup in {backup.backup_dir} says {batches} batches of epoch {epoch} were "
            f"trained, but an epoch has {steps}"
        )
    stop = _StopAfterEpoch(epoch)
    with backup.continuing_epoch(batches):
        first = model.fit(
            train_data.skip(batches),
            epochs=epochs,
            initial_epoch=epoch,
            callbacks=[*callbacks, stop],
            **first_kwargs,
        )
    model.stop_training = stop.stopped_by_others
    if model.stop_training or epoch + 1 >= epochs:
        backup.remove_backup()  # the run ends here: what the first `fit`'s end did not do
        return first
    first_epochs = list(first.epoch)
    first_history = {name: list(values) for name, values in first.history.items()}
    second = model.fit(
        train_data, epochs=epochs, initial_epoch=epoch + 1, callbacks=callbacks, **fit_kwargs
    )
    return _merge(first_epochs, first_history, second)


class _StopAfterEpoch(keras.callbacks.Callback):
    """Ends `fit` after epoch `epoch`; records whether another callback stopped it too."""

    def __init__(self, epoch: int):
        super().__init__()
        self.epoch = epoch
        self.stopped_by_others = False

    def on_epoch_end(self, epoch, logs=None):
        if epoch >= self.epoch:
            self.stopped_by_others = bool(self.model.stop_training)
            self.model.stop_training = True


def _cardinality(train_data) -> int | None:
    """The number of batches of `train_data`, `None` when unknown or infinite.

    Raises:
        TypeError: `train_data` is not a `tf.data.Dataset`.
    """
    import tensorflow as tf

    if not isinstance(train_data, tf.data.Dataset):
        raise TypeError(
            "resuming in the middle of an epoch needs train_data as a tf.data.Dataset; "
            f"got {type(train_data).__name__}"
        )
    count = int(train_data.cardinality())
    return count if count >= 0 else None


def _merge(
    first_epochs: list[int], first_history: dict[str, list], second: keras.callbacks.History
) -> keras.callbacks.History:
    """`second` (the `History` of the second `fit`) holding the epochs of both calls."""
    trained = len(second.epoch)  # a `History` passed in callbacks keeps every call's values
    history = {name: list(values) for name, values in first_history.items()}
    for name, values in second.history.items():
        history.setdefault(name, []).extend(values[len(values) - trained :])
    second.epoch = first_epochs + list(second.epoch)
    second.history = history
    return second
