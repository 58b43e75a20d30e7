"""The callbacks of a training run: backup for resuming, checkpoints, logs."""

import os
from pathlib import Path

import keras

from keras_attention.training.backup import ClusterBackupAndRestore

__all__ = ["ClusterBackupAndRestore", "training_callbacks"]


def training_callbacks(
    output_dir: str | os.PathLike,
    backup_dir: str | os.PathLike | None = None,
    is_chief: bool = True,
    backup_every_steps: int | None = None,
) -> list:
    """Keras callbacks that make a run resumable and observable.

    - `ClusterBackupAndRestore` in `backup_dir` (first, so that the backup of an epoch is
      written before its log line), keeping the previous backup too: a killed run started
      again resumes at the last epoch, or with `backup_every_steps` and
      `keras_attention.training.resume.fit_resumable`, at most that many steps back.
    - `ModelCheckpoint` of the weights after every epoch in `output_dir/checkpoints`
      (`epoch_001.weights.h5`, ...), for checkpoint averaging.
    - `TensorBoard` logs in `output_dir/logs` and a CSV log `output_dir/training_log.csv`.

    Args:
        output_dir: the folder this process writes (a temporary one on non-chief workers).
        backup_dir: the run's backup folder, shared by all workers (default:
            `output_dir/backup`).
        is_chief: whether this process writes `backup_dir`.
        backup_every_steps: also back up every this many training steps (default: at
            epoch ends only).

    Returns:
        The list of callbacks.
    """
    output_dir = Path(output_dir)
    backup_dir = output_dir / "backup" if backup_dir is None else Path(backup_dir)
    (output_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    return [
        ClusterBackupAndRestore(
            backup_dir,
            is_chief=is_chief,
            save_freq="epoch" if backup_every_steps is None else backup_every_steps,
            double_checkpoint=True,
        ),
        keras.callbacks.ModelCheckpoint(
            str(output_dir / "checkpoints" / "epoch_{epoch:03d}.weights.h5"),
            save_weights_only=True,
        ),
        keras.callbacks.TensorBoard(str(output_dir / "logs")),
        keras.callbacks.CSVLogger(str(output_dir / "training_log.csv"), append=True),
    ]
