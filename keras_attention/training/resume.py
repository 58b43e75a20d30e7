"""`fit_resumable`: `model.fit` that resumes a run killed mid-epoch where its backup stands."""

from collections.abc import Callable, Sequence

import keras

from keras_attention.distribute.backup import ClusterBackupAndRestore


def fit_resumable(
    model: keras.Model,
    train_data,
    epochs: int,
    callbacks: Sequence[keras.callbacks.Callback] | None = None,
    after_restore: Callable[[int, int], None] | None = None,
    steps_per_batch: int = 1,
    **fit_kwargs,
) -> keras.callbacks.History:
    """`model.fit(train_data, epochs=epochs, callbacks=callbacks, **fit_kwargs)`, resuming a
    run killed in the middle of an epoch at the batch its backup was made.

    The backup is that of the `ClusterBackupAndRestore` among `callbacks`. When it says that
    the first B batches of epoch E were trained (it backs up every N steps: `save_freq=N`),
    this restores the weights and the optimizer's state, trains the rest of epoch E with a
    first `fit` (skipping its first B batches), then the remaining epochs with a second one:
    the run makes as many optimizer steps as an uninterrupted one and loses at most N of
    them. Otherwise (no backup, a backup made at an epoch end, no `ClusterBackupAndRestore`)
    it is `model.fit` itself.

    Which batches a resumed epoch trains depends on `train_data`:

    - a `tf.data.Dataset` of one epoch's batches, iterated afresh every epoch: a dataset
      that reshuffles every iteration shuffles afresh after a restart, so the resumed
      epochs do not see the batches, in the order, of an uninterrupted run;
    - a callable `epoch -> tf.data.Dataset` giving the batches of epoch `epoch` (0-based),
      the same ones, in the same order, whenever it is called for that epoch (e.g. shuffled
      with a seed that depends on the epoch), every epoch with as many: the run then trains
      on exactly the batches of an uninterrupted run, whenever it was killed. The epochs
      are fed to `fit` as one stream with `steps_per_epoch`.

    The metrics logged for a resumed epoch cover only its batches trained after the restart.

    The callbacks see the two `fit` calls (`on_train_begin` and `on_train_end` twice) and
    each epoch once: the first call's logs and `params` give its real epoch numbers and the
    run's `epochs`, and `params["steps"]` is the number of batches that call trains per
    epoch (the rest of epoch E in the first). Run it outside `strategy.scope()`, with the
    model built and compiled inside, as `model.fit`.

    Args:
        model: a built and compiled model.
        train_data: a `tf.data.Dataset` yielding one epoch's batches (with a known
            cardinality, or `steps_per_epoch` in `fit_kwargs`), or a callable giving the
            `tf.data.Dataset` of each epoch (with a known cardinality).
        epochs: the number of epochs of the whole run.
        callbacks: the callbacks of `fit`, with at most one `ClusterBackupAndRestore`.
        after_restore: called with `(epoch, batch)`, where the restored backup says
            training stands (`(initial_epoch, 0)` without one), before any training: e.g.
            to drop the log rows and checkpoints of epochs that the backup does not cover.
        steps_per_batch: for a callable `train_data`, the steps that each of its batches
            makes: 1, or the number of workers when they read their own files and
            `tf.distribute` splits each worker's batch over that many steps
            (`data.stream_batches`). An epoch is then `steps_per_batch` times its batches.
        **fit_kwargs: the other arguments of `model.fit` (`validation_data`, `verbose`,
            ...); `initial_epoch` only counts without a backup, as in `model.fit`.

    Returns:
        The `History` of the epochs trained, over both `fit` calls.

    Raises:
        TypeError: the run must continue mid-epoch and `train_data` is not a
            `tf.data.Dataset` (nor a callable giving them).
        ValueError: more than one `ClusterBackupAndRestore`, the backup counts at least as
            many batches as an epoch has, or an epoch of a callable `train_data` has an
            unknown number of batches.

    Example:

    >>> import os
    >>> from keras_attention.runs.train import load_run
    >>> from keras_attention.training.callbacks import training_callbacks
    >>> model, _ = load_run("runs/translator")
    >>> callbacks = training_callbacks("run", backup_every_steps=2)
    >>> history = fit_resumable(model, train_data, epochs=2, callbacks=callbacks,
    ...                         validation_data=val_data, verbose=0)
    >>> sorted(os.listdir("run"))  # its backup, in run/backup, is removed when training ends
    ['checkpoints', 'logs', 'training_log.csv']
    """
    callbacks = list(callbacks or [])
    backups = [callback for callback in callbacks if isinstance(callback, ClusterBackupAndRestore)]
    if len(backups) > 1:
        raise ValueError(f"callbacks must hold at most one ClusterBackupAndRestore; got {backups}")
    backup = backups[0] if backups else None
    epoch, batches = 0, 0
    if backup is not None:
        backup.set_model(model)
        epoch, batches = backup.restore()  # `fit` then leaves the restored state alone
    if not epoch:  # as `model.fit`: the backup's epoch wins over `initial_epoch`
        epoch = fit_kwargs.get("initial_epoch", 0)
    fit_kwargs.pop("initial_epoch", None)
    if after_restore is not None:
        after_restore(epoch, batches)
    if callable(train_data) and not _is_dataset(train_data):
        return _fit_epochs(
            model,
            train_data,
            epochs,
            callbacks,
            backup,
            (epoch, batches),
            steps_per_batch,
            fit_kwargs,
        )
    if backup is None or batches == 0 or epoch >= epochs:
        return model.fit(
            train_data, epochs=epochs, initial_epoch=epoch, callbacks=callbacks, **fit_kwargs
        )

    first_kwargs = dict(fit_kwargs)
    steps = _cardinality(train_data)
    if fit_kwargs.get("steps_per_epoch") is not None:
        steps = fit_kwargs["steps_per_epoch"]
        first_kwargs["steps_per_epoch"] = steps - batches
    _check_batches(backup, epoch, batches, steps)
    first, first_epochs, first_history = _fit_rest_of_epoch(
        model, train_data.skip(batches), epochs, callbacks, backup, epoch, batches, first_kwargs
    )
    if model.stop_training or epoch + 1 >= epochs:
        return first
    second = model.fit(
        train_data, epochs=epochs, initial_epoch=epoch + 1, callbacks=callbacks, **fit_kwargs
    )
    return _merge(first_epochs, first_history, second)


def _fit_epochs(
    model: keras.Model,
    epoch_data: Callable,
    epochs: int,
    callbacks: list,
    backup: ClusterBackupAndRestore | None,
    start: tuple[int, int],
    steps_per_batch: int,
    fit_kwargs: dict,
) -> keras.callbacks.History:
    """`fit_resumable` for a callable `epoch_data`, from batch `start[1]` of epoch
    `start[0]`: the epochs as one stream, with `steps_per_epoch` (with it, Keras reads one
    iterator across the epochs)."""
    epoch, batches = start
    fit_kwargs.pop("steps_per_epoch", None)
    first_data = epoch_data(min(epoch, epochs - 1))
    steps = _cardinality(first_data)
    if steps is None:
        raise ValueError("every epoch of train_data must have a known number of batches")
    steps *= steps_per_batch
    if batches:
        _check_batches(backup, epoch, batches, steps)
        if batches % steps_per_batch:
            raise ValueError(
                f"the backup in {backup.backup_dir} stands at step {batches} of epoch {epoch}, "
                f"in the middle of a batch of {steps_per_batch} steps"
            )

    def stream(first: int, data):
        for later in range(first + 1, epochs):
            data = data.concatenate(epoch_data(later))
        return data

    if epoch < epochs:
        # Unless its metrics are built, Keras builds them on a first batch of the training
        # data, an iteration that would shift a reshuffling dataset's order: built here, on
        # a batch of their own.
        model.evaluate(epoch_data(epoch).take(1), verbose=0)
    if batches == 0 or epoch >= epochs:
        return model.fit(
            stream(epoch, first_data) if epoch < epochs else first_data,
            epochs=epochs,
            initial_epoch=epoch,
            steps_per_epoch=steps,
            callbacks=callbacks,
            **fit_kwargs,
        )
    first_kwargs = {**fit_kwargs, "steps_per_epoch": steps - batches}
    rest = first_data.skip(batches // steps_per_batch)
    first, first_epochs, first_history = _fit_rest_of_epoch(
        model, rest, epochs, callbacks, backup, epoch, batches, first_kwargs
    )
    if model.stop_training or epoch + 1 >= epochs:
        return first
    second = model.fit(
        stream(epoch + 1, epoch_data(epoch + 1)),
        epochs=epochs,
        initial_epoch=epoch + 1,
        steps_per_epoch=steps,
        callbacks=callbacks,
        **fit_kwargs,
    )
    return _merge(first_epochs, first_history, second)


def _fit_rest_of_epoch(
    model: keras.Model,
    data,
    epochs: int,
    callbacks: list,
    backup: ClusterBackupAndRestore,
    epoch: int,
    batches: int,
    fit_kwargs: dict,
) -> tuple[keras.callbacks.History, list[int], dict]:
    """The first `fit` of a resumed epoch: the rest of epoch `epoch` only, the first
    `batches` counted as trained; returns its `History`, its epochs and its metrics."""
    stop = _StopAfterEpoch(epoch)
    with backup.continuing_epoch(batches):
        first = model.fit(
            data, epochs=epochs, initial_epoch=epoch, callbacks=[*callbacks, stop], **fit_kwargs
        )
    model.stop_training = stop.stopped_by_others
    if model.stop_training or epoch + 1 >= epochs:
        backup.remove_backup()  # the run ends here: what the first `fit`'s end did not do
    first_history = {name: list(values) for name, values in first.history.items()}
    return first, list(first.epoch), first_history


def _check_batches(
    backup: ClusterBackupAndRestore, epoch: int, batches: int, steps: int | None
) -> None:
    if steps is not None and batches >= steps:
        raise ValueError(
            f"the backup in {backup.backup_dir} says {batches} batches of epoch {epoch} were "
            f"trained, but an epoch has {steps}"
        )


def _is_dataset(data) -> bool:
    import tensorflow as tf

    return isinstance(data, tf.data.Dataset)


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
