"""The files a killed run resumes from, checked before it trains again (`check_resume_files`).

A run killed and started again resumes from its backup (`ClusterBackupAndRestore`: the
latest copy, `latest.weights.h5` and `training_metadata.json`, and the previous one, the
same names with `.bkp`), and its epoch checkpoints (`checkpoints/epoch_NNN.weights.h5`)
are averaged and scored once training ends. A damaged one would otherwise be found only
then, after the rest of the run has trained, or at the restore, as a traceback. Each is
opened here first (every weight read, the layout compared with the model's), and:

- a damaged latest backup: the run resumes from the previous copy, which replaces it;
- both copies damaged (or the latest without a previous one): refused, naming the files
  (the run can only start afresh: without a backup it would train from its first epoch and
  drop every checkpoint);
- a damaged checkpoint of an epoch that a backup copy ended (the copy stands at that epoch
  with no batch of the next one trained): written again from that copy, which holds the
  same weights;
- any other damaged checkpoint: refused, naming it, with the choice of removing it (the
  run then resumes without it: its epoch takes no part in the averages).

Checkpoints of epochs after the backup are not checked: the resumed run drops them and
writes them again (`repair_run_files`).
"""

import os
import shutil
import typing
from pathlib import Path

import keras

from keras_attention.core.atomic_files import atomic_path
from keras_attention.core.file_checks import CorruptFileError, read_json_record
from keras_attention.distribute.backup import ClusterBackupAndRestore
from keras_attention.training.callbacks import CHECKPOINT_NAME
from keras_attention.training.checkpoints import model_layout, weights_file_problem

PREVIOUS_SUFFIX = ".bkp"  # Keras's `BackupAndRestore(double_checkpoint=True)`


class BackupMetadata(typing.TypedDict, total=False):
    """`training_metadata.json` of a backup (`ClusterBackupAndRestore`): where training
    stands (`epoch`, 0-based, with `batch` of its batches trained), the optimizer's steps and
    the states of the model's random generators."""

    epoch: typing.Required[int]
    batch: int
    iterations: int
    seed_generators: list[list[int]]


class _Copy(typing.NamedTuple):
    """A copy of the backup: its files, where it stands, and what is wrong with it."""

    weights: Path
    metadata: Path
    state: tuple[int, int] | None  # (epoch, batch), `None` when damaged or missing
    problem: str | None


def _backup_paths(backup_dir: Path) -> tuple[Path, Path]:
    """The latest backup's weights and metadata (`ClusterBackupAndRestore._paths`)."""
    return tuple(Path(path) for path in ClusterBackupAndRestore._paths(str(backup_dir)))


def _read_copy(weights: Path, metadata: Path, layout: dict) -> _Copy:
    """A backup copy, checked: both files there, the weights the model's, the metadata a
    `BackupMetadata`."""
    for path in (weights, metadata):
        if not path.is_file():
            return _Copy(weights, metadata, None, f"{path} is missing")
    problem = weights_file_problem(weights, layout, read_data=True)
    if problem is not None:
        return _Copy(weights, metadata, None, f"{weights} {problem}")
    try:
        state = read_json_record(metadata, BackupMetadata)
    except (OSError, ValueError) as error:
        return _Copy(weights, metadata, None, str(error))
    return _Copy(weights, metadata, (state["epoch"], state.get("batch", 0)), None)


def _latest_copy(backup_dir: Path, layout: dict) -> _Copy:
    """The latest copy, with the metadata that a backup killed between its two renames left
    under its temporary name (which `ClusterBackupAndRestore` then takes)."""
    weights, metadata = _backup_paths(backup_dir)
    pending = metadata.with_name(metadata.name + ".new")
    unrenamed = weights.with_name(f"new.{weights.name}")
    if pending.is_file() and not unrenamed.exists():
        metadata = pending
    return _read_copy(weights, metadata, layout)


def _copy_file(source: Path, target: Path) -> None:
    with atomic_path(target) as tmp:
        shutil.copyfile(source, tmp)


def _fall_back(backup_dir: Path, previous: _Copy) -> _Copy:
    """Makes the previous copy the latest one (what `ClusterBackupAndRestore` does with an
    unreadable latest backup, here also for damage it would not see); returns it."""
    weights, metadata = _backup_paths(backup_dir)
    _copy_file(previous.weights, weights)
    _copy_file(previous.metadata, metadata)
    metadata.with_name(metadata.name + ".new").unlink(missing_ok=True)  # the damaged one's
    return previous._replace(weights=weights, metadata=metadata)


def _checkpoints(folder: Path, finished_epochs: int) -> list[tuple[int, Path]]:
    """The epoch checkpoints of the epochs `1..finished_epochs` in `folder`, by epoch."""
    if not folder.is_dir():
        return []
    found = []
    for path in folder.iterdir():
        match = CHECKPOINT_NAME.fullmatch(path.name)
        if match and int(match.group(1)) <= finished_epochs:
            found.append((int(match.group(1)), path))
    return sorted(found)


def _check_backup(backup_dir: Path, layout: dict, notes: list[str]) -> list[_Copy]:
    """The readable backup copies, the one the run resumes from first (`[]` without a
    backup); falls back to the previous copy if the latest is damaged.

    Raises:
        CorruptFileError: the latest copy is damaged and the previous one too, or missing.
    """
    latest = _latest_copy(backup_dir, layout)
    weights, metadata = _backup_paths(backup_dir)
    previous = _read_copy(
        weights.with_name(weights.name + PREVIOUS_SUFFIX),
        metadata.with_name(metadata.name + PREVIOUS_SUFFIX),
        layout,
    )
    exists = [p.exists() for p in (latest.weights, latest.metadata, previous.weights)]
    if not any(exists):
        return []
    if latest.problem is None:
        return [latest] + ([previous] if previous.problem is None else [])
    if previous.problem is not None:
        raise CorruptFileError(
            f"the run's backup cannot be read: {latest.problem}; its previous copy: "
            f"{previous.problem}; the run cannot resume: start it afresh (overwrite=True, "
            "tools/train.py --overwrite)"
        )
    epoch, batch = previous.state
    notes.append(
        f"{latest.problem}: the run goes on from the previous backup, which replaces it "
        f"(epoch {epoch + 1}, batch {batch})"
    )
    return [_fall_back(backup_dir, previous)]


def check_resume_files(
    model: keras.Model,
    output_dir: str | os.PathLike,
    backup_dir: str | os.PathLike | None = None,
) -> list[str]:
    """Checks the backup and the epoch checkpoints a killed run resumes from, before it
    trains (see the module's docstring for what is recovered and what is refused).

    Args:
        model: a built model of the run's architecture (its weights are not used).
        output_dir: the run's folder (`training_callbacks`' files).
        backup_dir: its backup folder (default: `output_dir/backup`).

    Returns:
        What was recovered, one line each (for the log); `[]` if nothing was damaged.

    Raises:
        CorruptFileError: naming the file that is damaged and cannot be recovered, and what
            to do.
    """
    output_dir = Path(output_dir)
    backup_dir = output_dir / "backup" if backup_dir is None else Path(backup_dir)
    layout = model_layout(model)
    notes = []
    copies = _check_backup(backup_dir, layout, notes)
    if not copies:
        return notes  # the run starts again from its first epoch
    finished = copies[0].state[0]
    for epoch, path in _checkpoints(output_dir / "checkpoints", finished):
        problem = weights_file_problem(path, layout, read_data=True)
        if problem is None:
            continue
        source = next((copy for copy in copies if copy.state == (epoch, 0)), None)
        if source is None:
            raise CorruptFileError(
                f"{path} {problem}; no backup holds the weights of epoch {epoch} to write it "
                "again: remove it to resume without it (its epoch then takes no part in the "
                "averages), or start the run afresh (tools/train.py --overwrite)"
            )
        _copy_file(source.weights, path)
        notes.append(f"{path} {problem}: written again from the backup {source.weights}")
    return notes
