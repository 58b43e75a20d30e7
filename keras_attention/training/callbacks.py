"""The callbacks of a training run: backup for resuming, checkpoints, logs."""

import os
from pathlib import Path

import keras


def training_callbacks(output_dir: str | os.PathLike, is_chief: bool = True) -> list:
    """Keras callbacks that make a run resumable and observable.

    - `BackupAndRestore` in `output_dir/backup` (first, so that the backup of an epoch is
      written before its log line): a killed run started again resumes at the last epoch.
    - `ModelCheckpoint` of the weights after every epoch in `output_dir/checkpoints`
      (`epoch_001.weights.h5`, ...), for checkpoint averaging.
    - `TensorBoard` logs in `output_dir/logs` and a CSV log `output_dir/training_log.csv`.

    Args:
        output_dir: the run's folder.
        is_chief: only the chief worker writes checkpoints and logs.

    Returns:
        The list of callbacks.
    """
    output_dir = Path(output_dir)
    callbacks = [
        keras.callbacks.BackupAndRestore(str(output_dir / "backup"), double_checkpoint=True)
    ]
    if is_chief:
        (output_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
        callbacks += [
            keras.callbacks.ModelCheckpoint(
                str(output_dir / "checkpoints" / "epoch_{epoch:03d}.weights.h5"),
                save_weights_only=True,
            ),
            keras.callbacks.TensorBoard(str(output_dir / "logs")),
            keras.callbacks.CSVLogger(str(output_dir / "training_log.csv"), append=True),
        ]
    return callbacks
