"""Backups every N steps (`ClusterBackupAndRestore(save_freq=N)`) and `fit_resumable`: a run
killed mid-epoch resumes at its last backup, with the steps, weights and logs of a run never
killed."""

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.training.callbacks import (
    ClusterBackupAndRestore,
    repair_run_files,
    training_callbacks,
    trim_training_log,
)
from keras_attention.training.resume import fit_resumable
from tests.run_helpers import kill_when, logged_epochs, read_metadata, regression_batches

EPOCHS, STEPS, BATCH = 3, 10, 4
SCRIPT = Path(__file__).parents[1] / "scripts" / "step_backup_fit.py"


def batches() -> tf.data.Dataset:
    """`STEPS` batches of known cardinality, the same in every epoch (no shuffling)."""
    return regression_batches(STEPS, BATCH)


def tiny_model() -> keras.Model:
    """The same initial weights every time; SGD with momentum, so that its state matters."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)]
    )
    model.compile(keras.optimizers.SGD(0.05, momentum=0.9), "mse", jit_compile=False)
    return model


class KilledError(Exception):
    """Stands for the kill of a run."""


class KillAt(keras.callbacks.Callback):
    """Raises `KilledError` at the end of batch `batch` (as `fit` numbers it) of epoch `epoch`."""

    def __init__(self, epoch: int, batch: int):
        super().__init__()
        self.at, self.epoch = (epoch, batch), None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if (self.epoch, batch) == self.at:
            raise KilledError(self.at)


def metadata(backup_dir: Path) -> dict:
    """Where the backup in `backup_dir` says training stands (without the dropout state)."""
    state = json.loads((backup_dir / "training_metadata.json").read_text())
    state.pop("seed_generators")
    return state


def killed_run(backup_dir: Path, kill_at: tuple[int, int], every: int) -> keras.Model:
    """A run with a backup every `every` steps, killed at `kill_at`; returns its model."""
    model = tiny_model()
    backup = ClusterBackupAndRestore(backup_dir, save_freq=every, double_checkpoint=True)
    with pytest.raises(KilledError):
        fit_resumable(model, batches(), EPOCHS, callbacks=[backup, KillAt(*kill_at)], verbose=0)
    return model


def resumed_run(backup_dir: Path, every: int) -> tuple[keras.Model, keras.callbacks.History]:
    model = tiny_model()
    backup = ClusterBackupAndRestore(backup_dir, save_freq=every, double_checkpoint=True)
    return model, fit_resumable(model, batches(), EPOCHS, callbacks=[backup], verbose=0)


def assert_same_weights(model: keras.Model, expected: list) -> None:
    for weights, reference in zip(model.get_weights(), expected, strict=True):
        np.testing.assert_allclose(weights, reference, rtol=1e-6, atol=1e-7)


@pytest.fixture(scope="module")
def uninterrupted() -> list:
    """The weights after an uninterrupted run."""
    model = tiny_model()
    model.fit(batches(), epochs=EPOCHS, verbose=0)
    assert int(model.optimizer.iterations.numpy()) == EPOCHS * STEPS
    return model.get_weights()


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> SimpleNamespace:
    """The callbacks of a run, a backup every 2 steps: killed after batch 7 of epoch 1,
    then resumed with `fit_resumable`."""
    output_dir = tmp_path_factory.mktemp("run")
    validation = batches().take(2)
    killed = tiny_model()
    with pytest.raises(KilledError):
        fit_resumable(
            killed,
            batches(),
            EPOCHS,
            callbacks=[*training_callbacks(output_dir, backup_every_steps=2), KillAt(1, 6)],
            validation_data=validation,
            verbose=0,
        )
    backup_before = metadata(output_dir / "backup")
    model = tiny_model()
    history = fit_resumable(
        model,
        batches(),
        EPOCHS,
        callbacks=training_callbacks(output_dir, backup_every_steps=2),
        validation_data=validation,
        verbose=0,
    )
    return SimpleNamespace(
        output_dir=output_dir,
        killed_steps=int(killed.optimizer.iterations.numpy()),
        backup_before=backup_before,
        model=model,
        history=history,
    )


def test_a_killed_run_lost_at_most_n_steps(run: SimpleNamespace):
    assert run.killed_steps == STEPS + 7
    assert run.backup_before == {"epoch": 1, "batch": 6, "iterations": STEPS + 6}


def test_the_resumed_run_makes_the_steps_of_an_uninterrupted_one(run: SimpleNamespace):
    assert int(run.model.optimizer.iterations.numpy()) == EPOCHS * STEPS
    assert run.history.epoch == [1, 2]  # both `fit` calls
    assert {name: len(values) for name, values in run.history.history.items()} == {
        "loss": 2,
        "val_loss": 2,
    }
    assert run.history.params["epochs"] == EPOCHS
    assert not (run.output_dir / "backup").exists()  # removed at the end, as by Keras


def test_the_resumed_run_ends_with_the_uninterrupted_weights(
    run: SimpleNamespace, uninterrupted: list
):
    assert_same_weights(run.model, uninterrupted)


def test_every_epoch_is_logged_and_checkpointed_once(run: SimpleNamespace):
    with (run.output_dir / "training_log.csv").open() as handle:
        assert [int(row["epoch"]) for row in csv.DictReader(handle)] == [0, 1, 2]
    checkpoints = sorted(path.name for path in (run.output_dir / "checkpoints").iterdir())
    assert checkpoints == [f"epoch_00{epoch}.weights.h5" for epoch in (1, 2, 3)]


def test_after_an_epoch_end_backup_the_epoch_restarts_and_later_saves_name_it(tmp_path: Path):
    # Backups every 3 of 10 steps: after 3, 6, 9, then at the epoch's end (not after 10).
    killed_run(tmp_path, kill_at=(1, 1), every=3)
    assert metadata(tmp_path) == {"epoch": 1, "batch": 0, "iterations": STEPS}
    killed_run(tmp_path, kill_at=(1, 4), every=3)
    # Keras's own callback would say epoch 0 here: it learns the epoch at an epoch's end.
    assert metadata(tmp_path) == {"epoch": 1, "batch": 3, "iterations": STEPS + 3}


def test_a_save_in_the_epoch_continued_after_a_resume_counts_its_earlier_batches(
    tmp_path: Path,
):
    killed_run(tmp_path, kill_at=(1, 6), every=2)
    assert metadata(tmp_path)["batch"] == 6
    killed_run(tmp_path, kill_at=(1, 1), every=2)  # the 2nd of the 4 batches left
    assert metadata(tmp_path) == {"epoch": 1, "batch": 8, "iterations": STEPS + 8}


def test_epoch_backups_record_the_next_epoch_and_no_batch(tmp_path: Path):
    model = tiny_model()
    backup = ClusterBackupAndRestore(tmp_path)
    with pytest.raises(KilledError):
        model.fit(batches(), epochs=EPOCHS, callbacks=[backup, KillAt(1, 6)], verbose=0)
    assert metadata(tmp_path) == {"epoch": 1, "batch": 0, "iterations": STEPS}


def corrupt_weights(backup_dir: Path) -> None:
    (backup_dir / "latest.weights.h5").write_bytes(b"not an HDF5 file")


def stale_metadata(backup_dir: Path) -> None:
    """As a kill between the renames of the weights and the metadata leaves a backup."""
    previous = (backup_dir / "training_metadata.json.bkp").read_text()
    (backup_dir / "training_metadata.json").write_text(previous)


def missing_weights(backup_dir: Path) -> None:
    (backup_dir / "latest.weights.h5").unlink()


@pytest.mark.parametrize("damage", [corrupt_weights, stale_metadata, missing_weights])
def test_a_damaged_latest_backup_falls_back_to_the_previous_one(
    tmp_path: Path, uninterrupted: list, damage
):
    killed_run(tmp_path, kill_at=(1, 6), every=2)
    assert json.loads((tmp_path / "training_metadata.json.bkp").read_text())["batch"] == 4
    damage(tmp_path)
    model, history = resumed_run(tmp_path, every=2)
    assert int(model.optimizer.iterations.numpy()) == EPOCHS * STEPS
    assert history.epoch == [1, 2]
    assert_same_weights(model, uninterrupted)


def test_a_damaged_backup_without_a_previous_one_is_an_error(tmp_path: Path):
    model = tiny_model()
    backup = ClusterBackupAndRestore(tmp_path, save_freq=2)
    with pytest.raises(KilledError):
        fit_resumable(model, batches(), EPOCHS, callbacks=[backup, KillAt(0, 4)], verbose=0)
    corrupt_weights(tmp_path)
    with pytest.raises(OSError):
        fit_resumable(tiny_model(), batches(), EPOCHS, callbacks=[backup], verbose=0)


def test_a_run_killed_in_its_last_epoch_ends_and_removes_its_backup(tmp_path: Path):
    killed_run(tmp_path, kill_at=(EPOCHS - 1, 4), every=2)
    model, history = resumed_run(tmp_path, every=2)
    assert int(model.optimizer.iterations.numpy()) == EPOCHS * STEPS
    assert history.epoch == [EPOCHS - 1]
    assert not tmp_path.exists()


@pytest.mark.parametrize("save_freq", [0, -3, True, "batch", 2.5])
def test_bad_save_freq_is_named(tmp_path: Path, save_freq):
    with pytest.raises(ValueError, match="save_freq"):
        ClusterBackupAndRestore(tmp_path, save_freq=save_freq)


# Under the default strategy, tools/train.py's SIGKILL mid-epoch (tests/tools/test_train.py)
# and the fault injection's mid-round kill (tests/system/test_fault_injection.py) resume alike.
def test_a_sigkilled_mirrored_run_resumes_mid_epoch(tmp_path: Path):
    command = [sys.executable, str(SCRIPT), str(tmp_path), "mirrored"]
    path = tmp_path / "backup" / "training_metadata.json"

    def mid_epoch() -> bool:
        state = read_metadata(path)
        return state is not None and state["epoch"] >= 1 and state["batch"] > 0

    kill_when(command, mid_epoch, timeout=300)
    at_kill = read_metadata(path)
    assert at_kill is not None and at_kill["epoch"] >= 1, "no mid-epoch backup in time"
    assert at_kill["batch"] > 0, at_kill
    logged = logged_epochs(tmp_path)

    second = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert second.returncode == 0, second.stderr[-3000:]
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["replicas"] == 2
    assert result["iterations"] == 3 * 12  # the script's epochs * steps, none trained twice
    assert result["epochs"] == list(range(at_kill["epoch"], 3))  # resumed, not restarted
    assert result["losses"] == len(result["epochs"])
    assert result["max_difference"] < 1e-6
    assert logged_epochs(tmp_path) == [*logged, *range(at_kill["epoch"], 3)] == [0, 1, 2]
    assert not (tmp_path / "backup").exists()


def shuffled_epoch(epoch: int) -> tf.data.Dataset:
    """Epoch `epoch`'s batches: the same pairs, shuffled with a seed of the epoch."""
    pairs = regression_batches(STEPS, BATCH).unbatch().shuffle(64, seed=epoch).batch(BATCH)
    return pairs.apply(tf.data.experimental.assert_cardinality(STEPS))


def dropout_model() -> keras.Model:
    """A model whose training draws random numbers (dropout), seeded alike every time."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(8, activation="tanh"),
            keras.layers.Dropout(0.5),
            keras.layers.Dense(1),
        ]
    )
    model.compile(keras.optimizers.SGD(0.05, momentum=0.9), "mse", jit_compile=False)
    return model


def test_epoch_data_and_dropout_resume_exactly_mid_epoch(tmp_path: Path):
    reference = dropout_model()
    fit_resumable(reference, shuffled_epoch, EPOCHS, verbose=0)
    killed = dropout_model()
    backup = ClusterBackupAndRestore(tmp_path, save_freq=3, double_checkpoint=True)
    with pytest.raises(KilledError):
        fit_resumable(killed, shuffled_epoch, EPOCHS, callbacks=[backup, KillAt(1, 4)], verbose=0)
    assert metadata(tmp_path)["batch"] == 3
    restored = []
    model = dropout_model()
    backup = ClusterBackupAndRestore(tmp_path, save_freq=3, double_checkpoint=True)
    history = fit_resumable(
        model,
        shuffled_epoch,
        EPOCHS,
        callbacks=[backup],
        after_restore=lambda epoch, batch: restored.append((epoch, batch)),
        verbose=0,
    )
    assert restored == [(1, 3)]
    assert history.epoch == [1, 2]
    assert int(model.optimizer.iterations.numpy()) == EPOCHS * STEPS
    # The same batches in the same order, the same dropout masks: the same weights.
    assert_same_weights(model, reference.get_weights())


def test_a_resumed_run_without_the_dropout_state_would_differ(tmp_path: Path):
    """The control of the test above: the dropout state matters (it is not in the weights)."""
    killed = dropout_model()
    backup = ClusterBackupAndRestore(tmp_path, save_freq=3)
    with pytest.raises(KilledError):
        fit_resumable(killed, shuffled_epoch, EPOCHS, callbacks=[backup, KillAt(1, 4)], verbose=0)
    state = json.loads((tmp_path / "training_metadata.json").read_text())
    assert len(state["seed_generators"]) == 1
    state["seed_generators"] = []  # as a backup that did not keep it
    (tmp_path / "training_metadata.json").write_text(json.dumps(state))
    resumed = dropout_model()
    fit_resumable(resumed, shuffled_epoch, EPOCHS, callbacks=[backup], verbose=0)
    reference = dropout_model()
    fit_resumable(reference, shuffled_epoch, EPOCHS, verbose=0)
    assert not np.allclose(resumed.get_weights()[0], reference.get_weights()[0])


def test_the_backup_comes_after_the_checkpoint_and_the_log(tmp_path: Path):
    callbacks = training_callbacks(tmp_path, before_logs=[KillAt(9, 9)])
    names = [type(callback).__name__ for callback in callbacks]
    assert names == [
        "DivergenceCheck", "KillAt", "EpochCheckpoint", "TensorBoard", "CSVLogger",
        "ClusterBackupAndRestore",
    ]  # fmt: skip


LOG = "epoch,loss\n0,1.0\n1,0.5\n"


@pytest.mark.parametrize(
    ("text", "finished", "kept"),
    [
        (LOG, 2, LOG),
        (LOG + "2,0.25\n", 2, LOG),  # logged, then killed before its backup
        (LOG + "2,0.2", 3, LOG),  # a row cut short by a kill
        (LOG + "1,0.4\n", 2, "epoch,loss\n0,1.0\n1,0.4\n"),  # an epoch logged twice
        (LOG, 0, None),  # killed before the first backup: no row is kept
        ("epoch,lo", 1, None),  # a header cut short
    ],
)
def test_the_log_keeps_one_complete_row_per_finished_epoch(
    tmp_path: Path, text: str, finished: int, kept: str | None
):
    path = tmp_path / "training_log.csv"
    path.write_text(text)
    trim_training_log(path, finished)
    assert (path.read_text() if path.exists() else None) == kept


def test_repair_drops_later_checkpoints_and_half_written_files(tmp_path: Path):
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    for name in ("epoch_001.weights.h5", "epoch_002.weights.h5", "epoch_003.weights.h5",
                 "best.weights.h5", ".epoch_003.weights.h5.x1y2.weights.h5"):  # fmt: skip
        (checkpoints / name).write_bytes(b"weights")
    (tmp_path / "training_log.csv").write_text(LOG + "2,0.25\n")
    repair_run_files(tmp_path, finished_epochs=2)
    assert sorted(path.name for path in checkpoints.iterdir()) == [
        "best.weights.h5", "epoch_001.weights.h5", "epoch_002.weights.h5",
    ]  # fmt: skip
    assert (tmp_path / "training_log.csv").read_text() == LOG


@pytest.mark.parametrize(("kill_at", "expected"), [((0, 1), (0, 2)), ((1, 6), (1, 6))])
def test_a_backup_killed_between_its_renames_is_completed(
    tmp_path: Path, uninterrupted: list, kill_at: tuple[int, int], expected: tuple[int, int]
):
    """The weights renamed into place, the metadata still under its temporary name: the
    backup is the new one (also when it is the first, with no previous one to fall back to)."""
    killed_run(tmp_path, kill_at=kill_at, every=2)
    metadata_path = tmp_path / "training_metadata.json"
    metadata_path.rename(tmp_path / "training_metadata.json.new")
    if kill_at[0] > 0:  # the metadata in place is then the previous backup's
        shutil.copyfile(tmp_path / "training_metadata.json.bkp", metadata_path)
    restored = []
    model = tiny_model()
    backup = ClusterBackupAndRestore(tmp_path, save_freq=2, double_checkpoint=True)
    fit_resumable(
        model,
        batches(),
        EPOCHS,
        callbacks=[backup],
        after_restore=lambda epoch, batch: restored.append((epoch, batch)),
        verbose=0,
    )
    assert restored == [expected]
    assert int(model.optimizer.iterations.numpy()) == EPOCHS * STEPS
    assert_same_weights(model, uninterrupted)
