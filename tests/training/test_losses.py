"""LabelSmoothedCrossEntropy (Section 5.4) against a float64 NumPy reference."""

import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_attention.training import LabelSmoothedCrossEntropy
from tests.conftest import to_numpy

VOCABULARY_SIZE = 7
# Batch of 3 sequences of 5 tokens; 0 is padding (row 2 is almost all padding).
TARGETS = np.array([[3, 1, 6, 2, 0], [5, 5, 4, 0, 0], [2, 0, 0, 0, 0]], dtype="int32")
REPO_ROOT = Path(__file__).resolve().parents[2]


def random_logits(shape: tuple, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).normal(size=(*shape, VOCABULARY_SIZE)) * 2.0).astype(
        "float32"
    )


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Log-probabilities over the last axis, in float64."""
    logits = np.asarray(logits, dtype=np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def weighted_token_mean(values: np.ndarray, real: np.ndarray) -> float:
    """Mean of `values` over the `real` (weighted) tokens; 0 when there is none."""
    count = real.sum()
    return float((values * real).sum() / count) if count > 0 else 0.0


def reference_loss(
    targets: np.ndarray, logits: np.ndarray, label_smoothing: float, pad_id: int = 0
) -> float:
    """Cross-entropy against `(1 - eps) * one_hot + eps / V`, averaged over non-pad tokens."""
    vocabulary = logits.shape[-1]
    one_hot = np.eye(vocabulary)[targets]  # (B, T, V)
    distribution = (1.0 - label_smoothing) * one_hot + label_smoothing / vocabulary
    per_token = -(distribution * log_softmax(logits)).sum(axis=-1)  # (B, T)
    return weighted_token_mean(per_token, (targets != pad_id).astype(np.float64))


def with_pad_id(targets: np.ndarray, pad_id: int) -> np.ndarray:
    """`TARGETS` with `pad_id` marking the padding (and real tokens moved off `pad_id`)."""
    real = targets != 0
    moved = np.where(targets == pad_id, (pad_id + 1) % VOCABULARY_SIZE, targets)
    return np.where(real, moved, pad_id).astype("int32")


def run_distribution_script() -> dict:
    """Runs `DISTRIBUTION_SCRIPT` in a fresh Python (logical devices must be set before
    TensorFlow initialises) and returns what it printed as JSON on its last line."""
    env = {**os.environ, "KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "3"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    result = subprocess.run(
        [sys.executable, "-c", DISTRIBUTION_SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


# Under `MirroredStrategy` over 2 logical CPUs: a batch of 4 split 2 + 2 across the replicas,
# (1) in a custom step: the per-replica losses and gradients summed over the replicas, and
# (2) in `model.fit` with SGD(learning_rate=1): the reported loss and the weight change
# (= minus the gradient); each against the whole batch on one device.
DISTRIBUTION_SCRIPT = r"""
import json
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras
import numpy as np

from keras_attention.training import LabelSmoothedCrossEntropy

V, T = 7, 5
rng = np.random.default_rng(0)
inputs = rng.integers(1, V, size=(4, T)).astype("int32")
tokens = rng.integers(1, V, size=(4, T)).astype("int32")
# Real tokens per row; rows 0-1 go to replica 0, rows 2-3 to replica 1.
LENGTHS = {"equal_halves": [5, 3, 4, 4], "unequal_halves": [5, 4, 1, 2]}


def make_model():
    keras.utils.set_random_seed(3)
    return keras.Sequential(
        [keras.Input((T,), dtype="int32"), keras.layers.Embedding(V, 4), keras.layers.Dense(V)]
    )


def dense(gradients):
    return [tf.convert_to_tensor(g) for g in gradients]


def listed(values):
    return [np.asarray(v).tolist() for v in values]


strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
results = {"replicas": strategy.num_replicas_in_sync}
for case, lengths in LENGTHS.items():
    targets = np.where(np.arange(T)[None] < np.array(lengths)[:, None], tokens, 0)
    targets = targets.astype("int32")
    loss_fn = LabelSmoothedCrossEntropy(0.1)

    model = make_model()
    initial = [w.numpy() for w in model.trainable_weights]
    with tf.GradientTape() as tape:
        loss = loss_fn(targets, model(inputs))
    gradients = dense(tape.gradient(loss, model.trainable_weights))
    one_device = {"loss": float(loss), "gradients": listed(gradients)}

    with strategy.scope():
        model = make_model()

    def replica_inputs(context):
        rows = slice(2 * context.replica_id_in_sync_group, 2 * context.replica_id_in_sync_group + 2)
        return tf.constant(inputs[rows]), tf.constant(targets[rows])

    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x))
        return loss, dense(tape.gradient(loss, model.trainable_weights))

    per_replica = strategy.run(
        tf.function(step),
        args=strategy.experimental_distribute_values_from_function(replica_inputs),
    )
    loss, gradients = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
    custom_step = {"loss": float(loss), "gradients": listed(gradients)}

    with strategy.scope():
        model = make_model()
        model.compile(optimizer=keras.optimizers.SGD(1.0), loss=loss_fn, jit_compile=False)
    history = model.fit(inputs, targets, batch_size=4, epochs=1, shuffle=False, verbose=0)
    change = [a - w.numpy() for a, w in zip(initial, model.trainable_weights)]
    fit = {"loss": history.history["loss"][0], "gradients": listed(change)}
    results[case] = {"one_device": one_device, "custom_step": custom_step, "fit": fit}
print(json.dumps(results))
"""


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1, 0.3])
@pytest.mark.parametrize("pad_id", [0, 3])
def test_matches_float64_reference(label_smoothing: float, pad_id: int):
    targets = with_pad_id(TARGETS, pad_id)
    logits = random_logits(targets.shape)
    loss = LabelSmoothedCrossEntropy(label_smoothing, pad_id=pad_id)(targets, logits)
    assert tuple(loss.shape) == ()
    expected = reference_loss(targets, logits, label_smoothing, pad_id)
    np.testing.assert_allclose(float(to_numpy(loss)), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_pad_positions_are_ignored(label_smoothing: float):
    loss_fn = LabelSmoothedCrossEntropy(label_smoothing)
    logits = random_logits(TARGETS.shape)
    loss = float(to_numpy(loss_fn(TARGETS, logits)))
    padded = (TARGETS == 0)[:, :, None]
    changed = np.where(padded, random_logits(TARGETS.shape, seed=9) * 5.0, logits)
    np.testing.assert_allclose(float(to_numpy(loss_fn(TARGETS, changed))), loss, rtol=1e-6)
    # A real position does count.
    changed[0, 0] += np.eye(VOCABULARY_SIZE, dtype="float32")[TARGETS[0, 0]] * 3.0
    assert abs(float(to_numpy(loss_fn(TARGETS, changed))) - loss) > 1e-3


def test_half_precision_logits_give_the_float32_loss():
    logits = random_logits(TARGETS.shape).astype("float16")
    loss = LabelSmoothedCrossEntropy(0.1)(TARGETS, logits)
    assert keras.backend.standardize_dtype(loss.dtype) == "float32"
    expected = reference_loss(TARGETS, logits.astype(np.float64), 0.1)
    np.testing.assert_allclose(float(to_numpy(loss)), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_all_padding_batch_gives_zero_not_nan(label_smoothing: float):
    targets = np.zeros_like(TARGETS)
    loss = float(
        to_numpy(LabelSmoothedCrossEntropy(label_smoothing)(targets, random_logits(targets.shape)))
    )
    assert loss == 0.0


def test_config_round_trip():
    loss_fn = LabelSmoothedCrossEntropy(label_smoothing=0.2, pad_id=3, name="smoothed")
    config = loss_fn.get_config()
    assert config["label_smoothing"] == 0.2 and config["pad_id"] == 3
    assert config["name"] == "smoothed"
    restored = LabelSmoothedCrossEntropy.from_config(config)
    assert restored.get_config() == config
    deserialized = keras.losses.deserialize(keras.losses.serialize(loss_fn))
    assert isinstance(deserialized, LabelSmoothedCrossEntropy)
    targets = with_pad_id(TARGETS, 3)
    logits = random_logits(targets.shape)
    expected = reference_loss(targets, logits, 0.2, pad_id=3)
    for loss in (restored, deserialized):
        np.testing.assert_allclose(float(to_numpy(loss(targets, logits))), expected, rtol=1e-5)


@pytest.mark.parametrize("label_smoothing", [-0.1, 1.0, 1.5, "0.1", True])
def test_label_smoothing_outside_unit_interval_raises(label_smoothing):
    with pytest.raises(ValueError, match="label_smoothing"):
        LabelSmoothedCrossEntropy(label_smoothing=label_smoothing)


@pytest.fixture(scope="module")
def distributed_results() -> dict:
    return run_distribution_script()


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.distribute only")
@pytest.mark.parametrize("case", ["equal_halves", "unequal_halves"])
@pytest.mark.parametrize("how", ["custom_step", "fit"])
def test_batch_split_across_replicas_equals_whole_batch(distributed_results, case, how):
    assert distributed_results["replicas"] == 2
    expected, actual = distributed_results[case]["one_device"], distributed_results[case][how]
    np.testing.assert_allclose(actual["loss"], expected["loss"], rtol=1e-5, atol=1e-6)
    assert len(actual["gradients"]) == len(expected["gradients"])
    for gradient, expected_gradient in zip(actual["gradients"], expected["gradients"], strict=True):
        np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-4, atol=1e-6)
