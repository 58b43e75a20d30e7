"""The callbacks of a training run: backup for resuming, checkpoints, logs."""

import os
import shutil
import tempfile
from pathlib import Path

import keras


class ClusterBackupAndRestore(keras.callbacks.BackupAndRestore):
    """`keras.callbacks.BackupAndRestore` that several workers can share.

    Keras's callback has every worker write the same files at once. Here every worker
    restores from `backup_dir` (on storage that all of them see, such as NFS or a bucket),
    only the chief writes there, and the other workers write their backup (saving can take
    part in cross-worker communication, so they must save too) to a temporary folder that is
    deleted straight away. On one machine it is Keras's callback.

    Args:
        backup_dir: the chief's backup folder, read by every worker.
        is_chief: whether this worker writes `backup_dir`.
        **kwargs: the other arguments of `keras.callbacks.BackupAndRestore`.
    """

    def __init__(self, backup_dir: str | os.PathLike, is_chief: bool = True, **kwargs):
        super().__init__(str(backup_dir), **kwargs)
        self.is_chief = is_chief

    def _save_model(self):
        if self.is_chief:
            return super()._save_model()
        shared = (self.backup_dir, self._weights_path, self._training_metadata_path)
        scratch = tempfile.mkdtemp(prefix="keras-attention-backup-")
        try:
            self.backup_dir = scratch
            self._weights_path = os.path.join(scratch, "latest.weights.h5")
            self._training_metadata_path = os.path.join(scratch, "training_metadata.json")
            super()._save_model()
        finally:
            self.backup_dir, self._weights_path, self._training_metadata_path = shared
            shutil.rmtree(scratch, ignore_errors=True)

    def on_train_end(self, logs=None):
        if self.is_chief:
            super().on_train_end(logs)


def training_callbacks(
    output_dir: str | os.PathLike,
    backup_dir: str | os.PathLike | None = None,
    is_chief: bool = True,
) -> list:
    """Keras callbacks that make a run resumable and observable.

    - `ClusterBackupAndRestore` in `backup_dir` (first, so that the backup of an epoch is
      written before its log line): a killed run started again resumes at the last epoch.
    - `ModelCheckpoint` of the weights after every epoch in `output_dir/checkpoints`
      (`epoch_001.weights.h5`, ...), for checkpoint averaging.
    - `TensorBoard` logs in `output_dir/logs` and a CSV log `output_dir/training_log.csv`.

    Args:
        output_dir: the folder this process writes (a temporary one on non-chief workers).
        backup_dir: the run's backup folder, shared by all workers (default:
            `output_dir/backup`).
        is_chief: whether this process writes `backup_dir`.

    Returns:
        The list of callbacks.
    """
    output_dir = Path(output_dir)
    backup_dir = output_dir / "backup" if backup_dir is None else Path(backup_dir)
    (output_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    return [
        ClusterBackupAndRestore(backup_dir, is_chief=is_chief, double_checkpoint=True),
        keras.callbacks.ModelCheckpoint(
            str(output_dir / "checkpoints" / "epoch_{epoch:03d}.weights.h5"),
            save_weights_only=True,
        ),
        keras.callbacks.TensorBoard(str(output_dir / "logs")),
        keras.callbacks.CSVLogger(str(output_dir / "training_log.csv"), append=True),
    ]
