"""Run by tests/training/test_step_backup.py: a run that a test SIGKILLs mid-epoch, then resumes.

    python step_backup_fit.py OUT_DIR default|mirrored

Trains a tiny Keras model with `fit_resumable` and `training_callbacks(OUT_DIR,
backup_every_steps=3)`, slowly (0.1 s a step) so that the test can kill it in the middle of
an epoch; started again, it resumes from the backup. `mirrored` trains under
MirroredStrategy over two logical CPUs. Once training ends, writes `OUT_DIR/result.json`:
the optimizer's step count, the epochs this process trained, and the largest difference
between its weights and those of an uninterrupted run made next in this process.
"""

import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf

OUT, MIRRORED = Path(sys.argv[1]), sys.argv[2] == "mirrored"
if MIRRORED:  # before TensorFlow starts
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402

from keras_attention.training.callbacks import training_callbacks  # noqa: E402
from keras_attention.training.resume import fit_resumable  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.run_helpers import regression_batches  # noqa: E402

EPOCHS, STEPS, BATCH, EVERY = 3, 12, 4, 3
strategy = (
    tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    if MIRRORED
    else tf.distribute.get_strategy()
)


def batches() -> tf.data.Dataset:
    """`STEPS` batches, the same in every epoch (no shuffling)."""
    return regression_batches(STEPS, BATCH)


def tiny_model() -> keras.Model:
    keras.utils.set_random_seed(0)
    with strategy.scope():
        model = keras.Sequential(
            [keras.Input((4,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)]
        )
        model.compile(keras.optimizers.SGD(0.05, momentum=0.9), "mse", jit_compile=False)
    return model


class Slow(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        time.sleep(0.1)


model = tiny_model()
callbacks = [*training_callbacks(OUT, backup_every_steps=EVERY), Slow()]
history = fit_resumable(model, batches(), EPOCHS, callbacks=callbacks, verbose=0)
reference = tiny_model()
reference.fit(batches(), epochs=EPOCHS, verbose=0)
difference = max(
    float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
    for a, b in zip(model.get_weights(), reference.get_weights(), strict=True)
)
result = {
    "iterations": int(model.optimizer.iterations.numpy()),
    "epochs": history.epoch,
    "losses": len(history.history["loss"]),
    "max_difference": difference,
    "replicas": strategy.num_replicas_in_sync,
}
(OUT / "result.json").write_text(json.dumps(result))
