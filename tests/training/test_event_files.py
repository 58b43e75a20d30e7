"""`trim_event_files`: TensorBoard summaries of epochs a restored backup has not finished are
dropped, a cut last record too; files that need nothing are left alone."""

from pathlib import Path

import pytest

tf = pytest.importorskip("tensorflow")

from keras_attention.training.event_files import trim_event_files  # noqa: E402


def write_events(folder: Path, steps: range, evaluations: bool = False) -> Path:
    """Epoch summaries at `steps`, each after an evaluation summary at step 100 * (epoch + 1)
    if `evaluations` (as `keras.callbacks.TensorBoard` writes them into `validation/`)."""
    writer = tf.summary.create_file_writer(str(folder))
    with writer.as_default():
        for step in steps:
            if evaluations:
                tf.summary.scalar("evaluation_loss_vs_iterations", 1.0, step=100 * (step + 1))
            tf.summary.scalar("epoch_loss", float(step), step=step)
    writer.close()
    [path] = [p for p in folder.iterdir() if p.name.startswith("events.out.tfevents.")]
    return path


def logged_steps(folder: Path) -> list[int]:
    steps = []
    for path in sorted(folder.glob("events.out.tfevents.*")):
        for record in tf.data.TFRecordDataset(str(path)):
            event = tf.compat.v1.Event.FromString(record.numpy())
            if event.HasField("summary"):
                steps.append(event.step)
    return steps


def test_later_epochs_are_dropped_and_the_rest_kept(tmp_path: Path):
    train = write_events(tmp_path / "train", range(5))
    validation = write_events(tmp_path / "validation", range(2), evaluations=True)
    untouched = validation.read_bytes()
    assert trim_event_files(tmp_path, 3) == [train]
    assert logged_steps(tmp_path / "train") == [0, 1, 2]
    assert validation.read_bytes() == untouched
    assert [p.name for p in tmp_path.rglob(".*")] == []


def test_evaluations_go_with_their_epoch(tmp_path: Path):
    write_events(tmp_path / "validation", range(4), evaluations=True)
    trim_event_files(tmp_path, 2)
    assert logged_steps(tmp_path / "validation") == [100, 0, 200, 1]


def test_an_evaluation_of_an_unfinished_epoch_is_dropped(tmp_path: Path):
    path = write_events(tmp_path / "validation", range(2), evaluations=True)
    writer = tf.summary.create_file_writer(str(tmp_path / "later"))
    with writer.as_default():  # a resumed run, killed before its epoch summary
        tf.summary.scalar("evaluation_loss_vs_iterations", 1.0, step=300)
    writer.close()
    assert trim_event_files(tmp_path, 2) == sorted((tmp_path / "later").iterdir())
    assert logged_steps(tmp_path / "later") == []
    assert logged_steps(path.parent) == [100, 0, 200, 1]


def test_a_cut_last_record_is_dropped(tmp_path: Path):
    path = write_events(tmp_path / "train", range(3))
    path.write_bytes(path.read_bytes()[:-7])  # the last write, killed half-way
    assert trim_event_files(tmp_path, 10) == [path]
    assert logged_steps(tmp_path / "train") == [0, 1]
    assert trim_event_files(tmp_path, 10) == []  # whole now


def test_temporary_files_of_a_killed_rewrite_are_removed(tmp_path: Path):
    write_events(tmp_path / "train", range(2))
    left = tmp_path / "train" / ".events.out.tfevents.1.host.2.v2.abc.tmp"
    left.write_bytes(b"half")
    assert trim_event_files(tmp_path, 2) == []
    assert not left.exists()


def test_no_logs_folder_is_nothing_to_do(tmp_path: Path):
    assert trim_event_files(tmp_path / "logs", 1) == []
