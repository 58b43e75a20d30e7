"""TensorBoard event files made to agree with a restored backup (`trim_event_files`).

Keras's `TensorBoard` callback logs each epoch's metrics as `epoch_*` summaries at step = the
epoch's index, after the `evaluation_*_vs_iterations` summaries of that epoch's validation (at
step = the optimizer's iterations). A run killed after it logged epoch E but before its backup
of E trains E again when it resumes and logs it again, into a new event file: TensorBoard would
draw both points; and a kill in the middle of a write leaves a cut last record. The repair
keeps, in every event file, the summaries up to the last `epoch_*` summary of an epoch the
backup has finished, and drops those after it and a cut last record.
"""

import os
from pathlib import Path

from keras_attention.core.atomic_files import atomic_path

EVENT_FILES = "events.out.tfevents.*"


def trim_event_files(logs_dir: str | os.PathLike, finished_epochs: int) -> list[Path]:
    """Drops, from the event files under `logs_dir`, the summaries of epochs a restored backup
    has not finished (see the module's docstring) and any cut last record; each changed file
    is rewritten atomically.

    Args:
        logs_dir: the `TensorBoard` callback's folder (its `train/` and `validation/`).
        finished_epochs: how many epochs the restored backup has finished.

    Returns:
        The event files that were rewritten.
    """
    import tensorflow as tf

    logs_dir = Path(logs_dir)
    if not logs_dir.is_dir():
        return []
    for path in logs_dir.rglob(f".{EVENT_FILES}"):  # a rewrite below, killed
        path.unlink()
    changed = []
    for path in sorted(logs_dir.rglob(EVENT_FILES)):
        records, cut = _read_records(tf, path)
        events = [tf.compat.v1.Event.FromString(record) for record in records]
        epochs = [_epoch(event) for event in events]
        finished = [
            i for i, epoch in enumerate(epochs) if epoch is not None and epoch < finished_epochs
        ]
        last = finished[-1] if finished else -1
        kept = [
            record
            for i, (record, event) in enumerate(zip(records, events, strict=True))
            if not event.HasField("summary")
            or (i <= last and (epochs[i] is None or epochs[i] < finished_epochs))
        ]
        if len(kept) == len(records) and not cut:
            continue
        # The writer closes before the temporary file is renamed onto `path`.
        with atomic_path(path, suffix=".tmp") as tmp, tf.io.TFRecordWriter(str(tmp)) as writer:
            for record in kept:
                writer.write(record)
        changed.append(path)
    return changed


def _read_records(tf, path: Path) -> tuple[list[bytes], bool]:
    """The complete records of the event file at `path`, and whether its last one is cut."""
    records = []
    try:
        for record in tf.data.TFRecordDataset(str(path)):
            records.append(record.numpy())
    except tf.errors.DataLossError:  # a write cut by a kill: what precedes it is whole
        return records, True
    return records, False


def _epoch(event) -> int | None:
    """The epoch of an `epoch_*` summary (its step); `None` for any other event."""
    tags = [value.tag for value in event.summary.value]
    return event.step if any(tag.startswith("epoch_") for tag in tags) else None
