"""The callbacks of a training run: the divergence check, checkpoints, logs, and the backup for
resuming; and the repair of those files when a killed run resumes."""

import csv
import os
import re
from collections.abc import Sequence
from pathlib import Path

import keras

from keras_attention.core.atomic_files import temporary_files, write_text_atomically
from keras_attention.core.checks import check_int_at_least
from keras_attention.core.weights_file import save_weights_atomically
from keras_attention.distribute.backup import ClusterBackupAndRestore
from keras_attention.training.divergence import DivergenceCheck
from keras_attention.training.event_files import trim_event_files

__all__ = [
    "ClusterBackupAndRestore",
    "DivergenceCheck",
    "EpochCheckpoint",
    "repair_run_files",
    "training_callbacks",
    "trim_training_log",
]

CHECKPOINT_NAME = re.compile(r"epoch_(\d+)\.weights\.h5")


class EpochCheckpoint(keras.callbacks.Callback):
    """Saves the weights after every epoch as `folder/epoch_NNN.weights.h5` (1-based),
    atomically: a kill leaves the previous files and no partial one.

    Args:
        folder: the checkpoint folder (created if missing).
        keep: keep only the last `keep` epochs' checkpoints (`None`: all); an older one is
            removed once the new one is in place.
    """

    def __init__(self, folder: str | os.PathLike, keep: int | None = None):
        super().__init__()
        if keep is not None:
            check_int_at_least("keep", keep, 1)
        self.folder = Path(folder)
        self.keep = keep

    def on_epoch_end(self, epoch, logs=None):
        self.folder.mkdir(parents=True, exist_ok=True)
        save_weights_atomically(self.model, self.folder / f"epoch_{epoch + 1:03d}.weights.h5")
        if self.keep is None:
            return
        for path in self.folder.glob("epoch_*.weights.h5"):
            match = CHECKPOINT_NAME.fullmatch(path.name)
            if match and int(match.group(1)) <= epoch + 1 - self.keep:
                path.unlink(missing_ok=True)


def training_callbacks(
    output_dir: str | os.PathLike,
    backup_dir: str | os.PathLike | None = None,
    is_chief: bool = True,
    backup_every_steps: int | None = None,
    before_logs: Sequence[keras.callbacks.Callback] = (),
    delete_backup: bool = True,
    keep_checkpoints: int | None = None,
    vocabulary_size: int | None = None,
) -> list:
    """Keras callbacks that make a run resumable and observable, in this order:

    - `DivergenceCheck`, first: a loss that is not a finite number or explodes, or weights
      that are not finite at an epoch's end or a step backup, stop training with
      `TrainingDivergedError` before a callback after it saves anything of that step or
      epoch (the backup of the last good state stays);
    - `before_logs`, e.g. `ValidationBleu`, which adds its scores to the epoch's logs;
    - `EpochCheckpoint` of the weights after every epoch in `output_dir/checkpoints`
      (`epoch_001.weights.h5`, ...), for checkpoint averaging;
    - `TensorBoard` logs in `output_dir/logs` and a CSV log `output_dir/training_log.csv`;
    - `ClusterBackupAndRestore` in `backup_dir`, keeping the previous backup too: a killed
      run started again resumes at the last epoch, or with `backup_every_steps` and
      `keras_attention.training.resume.fit_resumable`, at most that many steps back. It
      comes last, so that an epoch's backup is written after its checkpoint and its log
      row: a run killed before that backup trains the epoch again, and `repair_run_files`
      drops what that epoch had written.

    Args:
        output_dir: the folder this process writes (a temporary one on non-chief workers).
        backup_dir: the run's backup folder, shared by all workers (default:
            `output_dir/backup`).
        is_chief: whether this process writes `backup_dir`.
        backup_every_steps: also back up every this many training steps (default: at
            epoch ends only).
        before_logs: callbacks to run at each epoch's end before the checkpoint and logs.
        delete_backup: delete the backup when training ends (else the caller does, once
            what it does after training is done too).
        keep_checkpoints: keep only the last this many epoch checkpoints (`None`: all).
        vocabulary_size: the V of `DivergenceCheck`'s loss limit, 10 ln(V) (default: the
            model's `output_vocabulary_size`, else no limit: only non-finite losses count).

    Returns:
        The list of callbacks.
    """
    output_dir = Path(output_dir)
    backup_dir = output_dir / "backup" if backup_dir is None else Path(backup_dir)
    (output_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    backup = ClusterBackupAndRestore(
        backup_dir,
        is_chief=is_chief,
        save_freq="epoch" if backup_every_steps is None else backup_every_steps,
        double_checkpoint=True,
        delete_checkpoint=delete_backup,
    )
    divergence = DivergenceCheck(
        vocabulary_size,
        check_weights_every=backup_every_steps,
        batch_offset=lambda: backup.batches_before_fit,
    )
    return [
        divergence,
        *before_logs,
        EpochCheckpoint(output_dir / "checkpoints", keep_checkpoints),
        keras.callbacks.TensorBoard(str(output_dir / "logs")),
        keras.callbacks.CSVLogger(str(output_dir / "training_log.csv"), append=True),
        backup,
    ]


def trim_training_log(path: str | os.PathLike, finished_epochs: int) -> None:
    """Keeps in a `CSVLogger` file only the complete rows of the epochs `0..finished_epochs-1`,
    once each (the last row of an epoch wins); removes the file when none is left.

    A run killed after an epoch's log row but before its backup trains that epoch again
    and logs it again; one killed while writing a row leaves part of it. This drops both.

    Args:
        path: the CSV log (nothing happens when it is missing).
        finished_epochs: how many epochs the restored backup has finished.
    """
    path = Path(path)
    if not path.is_file():
        return
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines(keepends=True)
    if not lines or not lines[0].endswith("\n"):
        path.unlink()
        return
    header = next(csv.reader([lines[0]]))
    rows = {}
    for line in lines[1:]:
        if not line.endswith("\n"):
            continue  # a row cut short by a kill
        row = next(csv.reader([line]), [])
        if len(row) != len(header) or "epoch" not in header:
            continue
        try:
            epoch = int(row[header.index("epoch")])
        except ValueError:
            continue
        if 0 <= epoch < finished_epochs:
            rows[epoch] = line
    if not rows:
        path.unlink()
        return
    kept = lines[0] + "".join(rows[epoch] for epoch in sorted(rows))
    if kept != text:
        write_text_atomically(path, kept)


def repair_run_files(output_dir: str | os.PathLike, finished_epochs: int) -> None:
    """Makes the files of `training_callbacks` agree with a restored backup that has finished
    `finished_epochs` epochs, before training resumes from it.

    Drops the log rows (`trim_training_log`), the TensorBoard summaries (`trim_event_files`)
    and the checkpoints of later epochs, which a killed run wrote after that backup and which
    training writes again, and the temporary files of writes that a kill interrupted.

    Args:
        output_dir: the folder of the callbacks' files.
        finished_epochs: how many epochs the restored backup has finished.
    """
    output_dir = Path(output_dir)
    trim_training_log(output_dir / "training_log.csv", finished_epochs)
    trim_event_files(output_dir / "logs", finished_epochs)
    folder = output_dir / "checkpoints"
    for path in temporary_files(folder, ["epoch_*.weights.h5"]):
        path.unlink()
    if folder.is_dir():
        for path in folder.iterdir():
            match = CHECKPOINT_NAME.fullmatch(path.name)
            if match and int(match.group(1)) > finished_epochs:
                path.unlink()
    for path in temporary_files(output_dir, ["training_log.csv"]):
        path.unlink()
