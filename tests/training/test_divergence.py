"""A diverging run stops before anything of its bad steps is saved (`DivergenceCheck`), and
every JSON file the library writes is strict JSON (`json_text`)."""

import json
import math
import os
import subprocess
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.core.atomic_files import write_json_atomically
from keras_attention.training.callbacks import training_callbacks
from keras_attention.training.divergence import DivergenceCheck, TrainingDivergedError
from keras_attention.training.resume import fit_resumable
from tests.tools.test_train import train_command

VOCABULARY, STEPS, BATCH, EPOCHS = 50, 6, 8, 3


def strict_json(path: Path) -> object:
    """The JSON in `path`, read by a parser that refuses NaN and infinities."""

    def refuse(constant: str) -> None:
        raise ValueError(f"{path} holds {constant}, which is not JSON")

    return json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)


def batches(nan_batch: int | None = None) -> tf.data.Dataset:
    """`STEPS` batches of float32 features and class ids, the same every epoch; with
    `nan_batch`, that batch's features are NaN."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(STEPS * BATCH, 4)).astype("float32")
    y = rng.integers(0, VOCABULARY, STEPS * BATCH).astype("int32")
    if nan_batch is not None:
        x[nan_batch * BATCH : (nan_batch + 1) * BATCH] = np.nan
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)


def classifier(learning_rate: float = 0.1, logit_scale: float = 1.0) -> keras.Model:
    """A tiny model predicting one of `VOCABULARY` classes (its loss starts near
    ln(VOCABULARY)), with the same initial weights every time."""
    keras.utils.set_random_seed(0)
    output = keras.initializers.RandomNormal(stddev=0.05 * logit_scale)
    model = keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(16, activation="tanh"),
            keras.layers.Dense(VOCABULARY, kernel_initializer=output),
        ]
    )
    model.compile(
        keras.optimizers.SGD(learning_rate),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=False,
    )
    return model


class BatchesSeen(keras.callbacks.Callback):
    """Records the `(epoch, batch)` of every batch and epoch end it is called for."""

    def __init__(self):
        super().__init__()
        self.batches, self.epochs, self.epoch = [], [], None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        self.batches.append((self.epoch, batch))

    def on_epoch_end(self, epoch, logs=None):
        self.epochs.append(epoch)


def diverging_fit(
    model: keras.Model,
    output_dir: Path,
    data: tf.data.Dataset | None = None,
    before: tuple = (),
    vocabulary_size: int | None = None,
    backup_every_steps: int | None = None,
    **fit_kwargs,
) -> tuple[TrainingDivergedError, BatchesSeen]:
    """Trains `model` with `training_callbacks` (and a `BatchesSeen` among `before_logs`,
    after the callbacks of `before`), which must stop with `TrainingDivergedError`; returns
    it and what `BatchesSeen` saw."""
    seen = BatchesSeen()
    callbacks = training_callbacks(
        output_dir,
        before_logs=[seen],
        vocabulary_size=vocabulary_size,
        backup_every_steps=backup_every_steps,
    )
    data = batches() if data is None else data
    with pytest.raises(TrainingDivergedError) as error:
        fit_resumable(model, data, EPOCHS, callbacks=[*before, *callbacks], verbose=0,
                      **fit_kwargs)  # fmt: skip
    return error.value, seen


def backup_state(output_dir: Path) -> dict:
    return json.loads((output_dir / "backup" / "training_metadata.json").read_text())


def checkpoints(output_dir: Path) -> list[str]:
    return sorted(path.name for path in (output_dir / "checkpoints").glob("*.weights.h5"))


def test_an_absurd_learning_rate_stops_before_its_step_is_backed_up(tmp_path: Path):
    error, seen = diverging_fit(
        classifier(learning_rate=1e30), tmp_path, vocabulary_size=VOCABULARY, backup_every_steps=1
    )
    assert error.epoch == 1 and error.batch >= 2
    assert error.loss > 10 * math.log(VOCABULARY)
    assert f"epoch {error.epoch}, batch {error.batch}" in str(error)
    # No callback after the check saw the bad batch: no backup, checkpoint or log row of it.
    assert seen.batches and max(seen.batches) < (0, error.batch - 1)
    assert seen.epochs == []
    assert checkpoints(tmp_path) == []
    state = backup_state(tmp_path)
    assert (state["epoch"], state["batch"]) == (0, error.batch - 1)
    restored = classifier()
    restored.load_weights(tmp_path / "backup" / "latest.weights.h5")
    assert all(np.isfinite(weights).all() for weights in restored.get_weights())


def test_a_finite_loss_far_above_a_uniform_predictions_is_caught():
    """A loss of thousands (logits 2,000 times too large), read from the model's vocabulary."""
    model = classifier(logit_scale=2000.0)
    model.output_vocabulary_size = VOCABULARY  # as a `Transformer` has
    with pytest.raises(TrainingDivergedError) as error:
        model.fit(batches(), epochs=1, callbacks=[DivergenceCheck()], verbose=0)
    assert math.isfinite(error.value.loss) and error.value.loss > 10 * math.log(VOCABULARY)
    assert (error.value.epoch, error.value.batch) == (1, 1)
    assert "uniform prediction" in error.value.reason


def test_without_a_vocabulary_only_a_loss_that_is_not_a_number_counts():
    history = classifier(logit_scale=2000.0).fit(
        batches(), epochs=1, callbacks=[DivergenceCheck()], verbose=0
    )
    assert history.history["loss"][0] > 10 * math.log(VOCABULARY)


def test_a_loss_that_is_not_a_number_stops_training_at_its_batch(tmp_path: Path):
    error, seen = diverging_fit(classifier(), tmp_path, batches(nan_batch=3))
    assert (error.epoch, error.batch) == (1, 4)
    assert math.isnan(error.loss) and "not a finite number" in error.reason
    assert max(seen.batches) == (0, 2)
    assert checkpoints(tmp_path) == []
    assert not (tmp_path / "backup" / "training_metadata.json").exists()


def test_a_validation_loss_that_is_not_a_number_stops_training_before_the_checkpoint(
    tmp_path: Path,
):
    validation = batches(nan_batch=0).take(1)
    error, seen = diverging_fit(classifier(), tmp_path, validation_data=validation)
    assert (error.epoch, error.batch) == (1, STEPS)
    assert "validation loss" in error.reason
    assert seen.epochs == [] and checkpoints(tmp_path) == []
    assert not (tmp_path / "backup" / "training_metadata.json").exists()


class AtBatch(keras.callbacks.Callback):
    """Calls `action(model)` after batch `batch` (as `fit` numbers it) of every epoch."""

    def __init__(self, batch: int, action):
        super().__init__()
        self.batch, self.action = batch, action

    def on_train_batch_end(self, batch, logs=None):
        if batch == self.batch:
            self.action(self.model)


def spoil_weights(model: keras.Model) -> None:
    """Makes the last layer's kernel NaN (the loss logged for the batch stays finite)."""
    kernel = model.layers[-1].kernel
    kernel.assign(np.full(kernel.shape, np.nan, "float32"))


def test_weights_that_are_not_finite_are_found_before_the_step_backup(tmp_path: Path):
    error, _ = diverging_fit(
        classifier(), tmp_path, before=(AtBatch(3, spoil_weights),), backup_every_steps=2
    )
    assert (error.epoch, error.batch) == (1, 4) and "weights" in error.reason
    assert math.isfinite(error.loss)
    assert backup_state(tmp_path)["batch"] == 2  # the backup before, kept


class KilledError(Exception):
    """Stands for the kill of a run."""


def kill(model: keras.Model) -> None:
    """Stands for a SIGKILL of the run training `model`."""
    raise KilledError


def test_a_resumed_run_applies_the_same_rule_and_counts_the_batches_before_it(tmp_path: Path):
    data = batches(nan_batch=4)
    killed = classifier()
    callbacks = training_callbacks(tmp_path, backup_every_steps=2, vocabulary_size=VOCABULARY)
    with pytest.raises(KilledError):
        fit_resumable(killed, data, EPOCHS, callbacks=[*callbacks, AtBatch(2, kill)], verbose=0)
    assert backup_state(tmp_path)["batch"] == 2
    # As a restarted process: a fresh model and callbacks restore the backup (batch 2 of
    # epoch 0) and train the rest of the epoch.
    error, _ = diverging_fit(classifier(), tmp_path, data, vocabulary_size=VOCABULARY,
                             backup_every_steps=2)  # fmt: skip
    assert (error.epoch, error.batch) == (1, 5)
    assert backup_state(tmp_path)["batch"] == 4


def test_a_run_that_learns_is_not_stopped(tmp_path: Path):
    seen = BatchesSeen()
    callbacks = training_callbacks(tmp_path, before_logs=[seen], backup_every_steps=2,
                                   vocabulary_size=VOCABULARY)  # fmt: skip
    history = fit_resumable(
        classifier(), batches(), EPOCHS, callbacks=callbacks, validation_data=batches().take(2),
        verbose=0,
    )  # fmt: skip
    assert seen.epochs == list(range(EPOCHS))
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert checkpoints(tmp_path) == [f"epoch_{e:03d}.weights.h5" for e in range(1, EPOCHS + 1)]


def test_the_check_refuses_bad_settings():
    for kwargs in ({"factor": 1.0}, {"factor": "10"}, {"vocabulary_size": 1},
                   {"check_weights_every": 0}):  # fmt: skip
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            DivergenceCheck(**kwargs)


def test_json_files_hold_null_for_numbers_that_are_not_finite(tmp_path: Path):
    path = tmp_path / "metrics.json"
    data = {"loss": math.nan, "scores": [math.inf, -math.inf, 1.5], "best": {"bleu": np.nan},
            "pair": (math.nan, 2), "name": "NaN"}  # fmt: skip
    write_json_atomically(path, data)
    assert strict_json(path) == {
        "loss": None, "scores": [None, None, 1.5], "best": {"bleu": None}, "pair": [None, 2],
        "name": "NaN",
    }  # fmt: skip


@pytest.fixture(scope="module")
def diverged_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """tools/train.py with an absurd learning rate, backing up every step."""
    output_dir = tmp_path_factory.mktemp("diverged")
    command = train_command(
        output_dir, 2, "--learning-rate-scale", "1e30", "--backup-every-steps", "1",
        "--validation-bleu-every", "1",
    )  # fmt: skip
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env,
                          check=False)  # fmt: skip
    return done, output_dir


def test_the_train_tool_reports_a_diverged_run_in_one_line(diverged_run):
    done, _ = diverged_run
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr[-3000:]
    assert errors[0].startswith("error: training diverged at epoch 1, batch "), errors[0]
    for option in ("--learning-rate-scale", "--warmup-steps", "--overwrite"):
        assert option in errors[0]


def test_the_train_tool_saves_nothing_of_a_diverged_run(diverged_run):
    _, output_dir = diverged_run
    assert not (output_dir / "model.keras").exists()
    assert not (output_dir / "export").exists()
    assert not (output_dir / "checkpoints" / "best.weights.h5").exists()
    assert list((output_dir / "checkpoints").glob("epoch_*")) == []
    files = sorted(output_dir.rglob("*.json"))
    assert output_dir / "config.json" in files
    for path in files:
        strict_json(path)
