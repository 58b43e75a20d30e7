"""`ClusterBackupAndRestore`: the backup a killed run resumes from, every epoch or every N steps."""

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator

import keras
import numpy as np

from keras_attention.core.atomic_files import fault_point
from keras_attention.core.weights_file import write_weights_file


class ClusterBackupAndRestore(keras.callbacks.BackupAndRestore):
    """`keras.callbacks.BackupAndRestore` that several workers can share, and that can back up
    every N steps.

    Keras's callback has every worker write the same files at once. Here every worker
    restores from `backup_dir` (a local path on storage that all of them see, such as NFS),
    only the chief writes there, and the other workers write their backup (saving can take
    part in cross-worker communication, so they must save too) to a temporary folder that is
    deleted straight away.

    With an integer `save_freq` N it backs up every N training batches and at the end of
    every epoch, and the metadata file says where training stands: `{"epoch": E, "batch": B}`,
    epoch E (0-based) being trained with its first B batches done (B is 0 at an epoch end,
    E then being the next epoch). Plain `model.fit` restarts epoch E from its first batch
    (Keras's behaviour); `keras_attention.training.resume.fit_resumable` trains only its
    remaining batches, so that a run killed mid-epoch loses at most N steps.

    Place it last among the callbacks: its epoch-end backup then follows what the others
    write for the epoch (checkpoint, log row), and a run killed before that backup trains
    the epoch again (`keras_attention.training.callbacks.repair_run_files` drops what the
    epoch had written).

    Each file is written under a temporary name and then renamed over the old one, so that a
    kill never leaves a half-written file; the metadata also records the optimizer's step
    count and the states of the model's random generators (dropout; `save_weights` leaves
    them out). A backup killed between the renames of its weights and of its metadata is
    completed when restored (the new metadata waits, complete, under its temporary name);
    one whose weights do not match its metadata otherwise counts as unreadable. An
    unreadable latest backup falls back to the previous one with `double_checkpoint=True`.

    Args:
        backup_dir: the chief's backup folder, read by every worker.
        is_chief: whether this worker writes `backup_dir`.
        save_freq: `"epoch"`, or back up every `save_freq` batches and at every epoch end.
        double_checkpoint: also keep the previous backup, to fall back to.
        delete_checkpoint: delete the backup at the end of training.

    Example:

    >>> from keras_attention.runs.train import load_run
    >>> from keras_attention.training.resume import fit_resumable
    >>> model, _ = load_run("runs/translator")
    >>> backup = ClusterBackupAndRestore("run/backup", save_freq=2, double_checkpoint=True,
    ...                                  delete_checkpoint=False)
    >>> history = fit_resumable(model, train_data, epochs=2, callbacks=[backup], verbose=0)
    >>> sorted(os.listdir("run/backup"))  # the latest backup and the one before (.bkp)
    ['latest.weights.h5', 'latest.weights.h5.bkp', 'training_metadata.json',
     'training_metadata.json.bkp']
    >>> backup = ClusterBackupAndRestore("run/backup", save_freq=2, double_checkpoint=True)
    >>> history = fit_resumable(model, train_data, epochs=3, callbacks=[backup], verbose=0)
    >>> len(history.history["loss"])  # the backup says that 2 epochs were trained
    1
    """

    def __init__(
        self,
        backup_dir: str | os.PathLike,
        is_chief: bool = True,
        save_freq: str | int = "epoch",
        double_checkpoint: bool = False,
        delete_checkpoint: bool = True,
    ):
        valid_int = isinstance(save_freq, int) and not isinstance(save_freq, bool)
        if save_freq != "epoch" and not (valid_int and save_freq > 0):
            raise ValueError(f"save_freq must be 'epoch' or a positive integer; got {save_freq!r}")
        super().__init__(
            str(backup_dir),
            save_freq=save_freq,
            double_checkpoint=double_checkpoint,
            delete_checkpoint=delete_checkpoint,
        )
        self.is_chief = is_chief
        self._epoch_offset = 0  # batches of the current epoch trained before this `fit`
        self._batches_done = 0  # batches of the current epoch trained
        self._since_save = 0  # batches trained since the last backup
        self._continued_batches = 0  # see `continuing_epoch`
        self._keep_backup = False  # see `continuing_epoch`
        self._restored = False  # `restore` ran since the last `on_train_begin`

    def restore(self) -> tuple[int, int]:
        """Loads the backup into the model (see `set_model`): weights, optimizer state, and
        where training stands. `on_train_begin` calls it, unless it was called before that
        `fit`.

        Returns:
            `(epoch, batch)`: the epoch to train (0-based) and how many of its batches were
            trained; `(0, 0)` without a backup.

        Raises:
            OSError: the backup cannot be read (nor its previous one).
            ValueError: the model is not built.
        """
        paths = self._paths(self.backup_dir)
        previous = [f"{path}.bkp" for path in paths]
        try:
            state = self._load_committed(paths)
            if state is None and os.path.exists(previous[0]):
                raise FileNotFoundError(f"backup in {self.backup_dir} has only a previous state")
        except (OSError, ValueError):
            if not self.model.built or not os.path.exists(previous[0]):
                raise
            state = self._load_previous(paths, previous)
        self._restored = True
        if state is None:
            return 0, 0
        epoch, batch = state
        self.model._initial_epoch = epoch  # what Keras's callback does: `fit` starts there
        self._current_epoch = epoch
        return epoch, batch

    @contextlib.contextmanager
    def continuing_epoch(self, batches: int) -> Iterator[None]:
        """Within it, `fit` continues an epoch: its first epoch counts `batches` batches as
        already trained (`fit` is given the others), and the backup outlives `fit`'s end.

        Args:
            batches: how many batches of that epoch were trained before.
        """
        self._continued_batches, self._keep_backup = batches, True
        try:
            yield
        finally:
            self._continued_batches, self._keep_backup = 0, False

    @property
    def batches_before_fit(self) -> int:
        """How many batches of the current epoch were trained before this `fit` (those of a
        resumed epoch that `continuing_epoch` counts), from the epoch's start on."""
        return self._epoch_offset

    def remove_backup(self) -> None:
        """Deletes the backup, as the end of training does (chief only, with
        `delete_checkpoint`)."""
        if self.is_chief:
            super().on_train_end()

    def on_train_begin(self, logs=None):
        self._since_save = 0
        if not self._restored:
            self.restore()
        self._restored = False

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch
        self._epoch_offset, self._continued_batches = self._continued_batches, 0
        self._batches_done = self._epoch_offset

    def on_train_batch_end(self, batch, logs=None):
        fault_point("step")
        if self.save_freq == "epoch":
            return
        done = self._epoch_offset + batch + 1  # `batch` is the last of the step's batches
        self._since_save += done - self._batches_done
        self._batches_done = done
        steps = self.params.get("steps")
        epoch_ends = steps is not None and batch + 1 >= steps  # the epoch's backup follows
        if self._since_save >= self.save_freq and not epoch_ends:
            self._save_model()

    def on_epoch_end(self, epoch, logs=None):
        fault_point("epoch_end")
        self._current_epoch, self._batches_done = epoch + 1, 0
        self._save_model()

    def on_train_end(self, logs=None):
        if not self._keep_backup:
            self.remove_backup()

    def _save_model(self):
        self._since_save = 0
        if self.is_chief:
            self._write(self.backup_dir, keep_previous=self.double_checkpoint)
            return
        scratch = tempfile.mkdtemp(prefix="keras-attention-backup-")
        try:
            self._write(scratch, keep_previous=False)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _write(self, folder: str, keep_previous: bool) -> None:
        """Writes the backup to `folder`, each file renamed into place once written."""
        os.makedirs(folder, exist_ok=True)
        weights, metadata = self._paths(folder)
        new_weights = os.path.join(folder, f"new.{os.path.basename(weights)}")
        write_weights_file(self.model, new_weights)
        state = {"epoch": self._current_epoch, "batch": self._batches_done}
        if self.model.optimizer is not None:
            state["iterations"] = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        state["seed_generators"] = [
            keras.ops.convert_to_numpy(variable).tolist() for variable in _seed_states(self.model)
        ]
        with open(f"{metadata}.new", "w") as file:
            file.write(json.dumps(state))
        if keep_previous and os.path.exists(weights) and os.path.exists(metadata):
            _link_or_copy(weights, f"{weights}.bkp")
            _link_or_copy(metadata, f"{metadata}.bkp")
        os.replace(new_weights, weights)
        fault_point("backup")
        os.replace(f"{metadata}.new", metadata)

    def _load(self, weights: str, metadata: str) -> tuple[int, int] | None:
        """Loads a backup's weights and returns its `(epoch, batch)`; `None` without one."""
        if not os.path.exists(weights) and not os.path.exists(metadata):
            return None
        for path in (weights, metadata):
            if not os.path.exists(path):
                raise FileNotFoundError(f"incomplete backup: {path} is missing")
        if not self.model.built:
            raise ValueError(
                "To use the BackupAndRestore callback, your model must be built before you "
                f"call `fit()`. Model {self.model} is unbuilt."
            )
        with open(metadata) as file:
            state = json.loads(file.read())
        optimizer = self.model.optimizer
        if optimizer is not None and not optimizer.built:
            strategy = getattr(self.model, "distribute_strategy", None)
            with strategy.scope() if strategy is not None else contextlib.nullcontext():
                optimizer.build(self.model.trainable_variables)
        self.model.load_weights(weights)
        if optimizer is not None and "iterations" in state:
            steps = int(keras.ops.convert_to_numpy(optimizer.iterations))
            if steps != state["iterations"]:
                raise OSError(
                    f"the backup's weights ({weights}, step {steps}) do not match its "
                    f"metadata ({metadata}, step {state['iterations']})"
                )
        seeds = state.get("seed_generators")
        variables = _seed_states(self.model)
        if seeds is not None and len(seeds) == len(variables):
            for variable, value in zip(variables, seeds, strict=True):
                variable.assign(np.asarray(value, dtype=variable.dtype))
        return int(state["epoch"]), int(state.get("batch", 0))

    def _load_committed(self, paths: tuple[str, str]) -> tuple[int, int] | None:
        """`_load`, after completing a backup that a kill interrupted between the renames of
        its weights and of its metadata: the weights in place are then the new ones, and
        the new metadata, complete, waits under its temporary name (the chief renames it;
        the other workers read it there)."""
        weights, metadata = paths
        pending = f"{metadata}.new"
        unrenamed = os.path.join(os.path.dirname(weights), f"new.{os.path.basename(weights)}")
        if not os.path.exists(pending) or os.path.exists(unrenamed):
            return self._load(weights, metadata)
        if self.is_chief:
            os.replace(pending, metadata)
            return self._load(weights, metadata)
        try:
            return self._load(weights, pending)
        except FileNotFoundError:  # the chief renamed it meanwhile
            return self._load(weights, metadata)

    def _load_previous(self, paths: tuple[str, str], previous: list[str]) -> tuple[int, int]:
        """Loads the previous backup; the chief also makes it the latest again."""
        if self.is_chief:
            for source, target in zip(previous, paths, strict=True):
                if os.path.exists(source):
                    _link_or_copy(source, target)
            return self._load(*paths)
        # `load_weights` wants a name ending in `.weights.h5`: a copy in a scratch folder.
        scratch = tempfile.mkdtemp(prefix="keras-attention-backup-")
        try:
            weights = os.path.join(scratch, os.path.basename(paths[0]))
            shutil.copyfile(previous[0], weights)
            return self._load(weights, previous[1])
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    @staticmethod
    def _paths(folder: str) -> tuple[str, str]:
        """The weights and metadata files of a backup in `folder` (Keras's names)."""
        return (
            os.path.join(folder, "latest.weights.h5"),
            os.path.join(folder, "training_metadata.json"),
        )


def _seed_states(model: keras.Model) -> list:
    """The states of the model's random generators (those of its dropout layers).

    `save_weights` leaves them out, so a backup keeps them in its metadata: a resumed run
    then draws the dropout masks of an uninterrupted one.
    """
    return [v for v in model.non_trainable_variables if v.name == "seed_generator_state"]


def _link_or_copy(source: str, target: str) -> None:
    """Makes `target` a hard link to `source` (a copy where links fail), atomically.

    Backups are only ever replaced by renaming, never rewritten in place, so a link keeps the
    old content when `source` is replaced.
    """
    new = f"{target}.new"
    if os.path.exists(new):
        os.remove(new)
    try:
        os.link(source, new)
    except OSError:
        shutil.copyfile(source, new)
    os.replace(new, target)
