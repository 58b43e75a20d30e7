"""MaskedAccuracy and Perplexity over real target tokens, against NumPy references."""

import keras
import numpy as np
import pytest

from keras_attention.training import MaskedAccuracy, Perplexity
from tests.conftest import to_numpy
from tests.training.test_losses import (
    TARGETS,
    log_softmax,
    random_logits,
    weighted_token_mean,
    with_pad_id,
)

# A second batch with another number of real tokens (9 vs 7), so that the mean over all
# tokens differs from the mean of the two batch means.
MORE_TARGETS = np.array([[4, 4, 1, 6, 2], [1, 3, 5, 6, 0]], dtype="int32")
METRICS = {"accuracy": MaskedAccuracy, "perplexity": Perplexity}


def reference_metric(
    name: str,
    targets: np.ndarray,
    logits: np.ndarray,
    pad_id: int = 0,
    sample_weight: np.ndarray | None = None,
) -> float:
    """Token accuracy, or `exp` of the mean negative log-likelihood, over the non-pad tokens
    (weighted by `sample_weight`, per token `(B, T)` or per sequence `(B,)`)."""
    real = (targets != pad_id).astype(np.float64)
    if sample_weight is not None:
        weight = np.asarray(sample_weight, dtype=np.float64)
        real = real * (weight[:, None] if weight.ndim == 1 else weight)
    if name == "accuracy":
        return weighted_token_mean((logits.argmax(axis=-1) == targets).astype(np.float64), real)
    log_probs = np.take_along_axis(log_softmax(logits), targets[..., None], axis=-1)[..., 0]
    return float(np.exp(weighted_token_mean(-log_probs, real)))


def confident_logits(targets: np.ndarray, seed: int) -> np.ndarray:
    """Random logits whose arg-max is right on about half of the tokens."""
    logits = random_logits(targets.shape, seed)
    right = np.random.default_rng(seed + 1).random(targets.shape) < 0.5
    boost = np.eye(logits.shape[-1], dtype="float32")[targets] * 8.0
    return np.where(right[..., None], logits + boost, logits)


def result(metric: keras.metrics.Metric) -> float:
    return float(to_numpy(metric.result()))


@pytest.mark.parametrize("name", list(METRICS))
@pytest.mark.parametrize("pad_id", [0, 3])
def test_matches_reference_over_non_pad_tokens(name: str, pad_id: int):
    targets = with_pad_id(TARGETS, pad_id)
    logits = confident_logits(targets, seed=1)
    metric = METRICS[name](pad_id=pad_id)
    metric.update_state(targets, logits)
    np.testing.assert_allclose(
        result(metric), reference_metric(name, targets, logits, pad_id), rtol=1e-5
    )
    # Logits at pad positions do not count.
    changed = np.where((targets == pad_id)[..., None], random_logits(targets.shape, 7) * 9, logits)
    metric.reset_state()
    metric.update_state(targets, changed)
    np.testing.assert_allclose(
        result(metric), reference_metric(name, targets, logits, pad_id), rtol=1e-5
    )


@pytest.mark.parametrize("name", list(METRICS))
def test_accumulates_tokens_across_updates_and_resets(name: str):
    metric = METRICS[name]()
    first, second = confident_logits(TARGETS, 2), confident_logits(MORE_TARGETS, 4)
    metric.update_state(TARGETS, first)
    metric.update_state(MORE_TARGETS, second)
    all_targets = np.concatenate([TARGETS, MORE_TARGETS])
    expected = reference_metric(name, all_targets, np.concatenate([first, second]))
    np.testing.assert_allclose(result(metric), expected, rtol=1e-5)
    metric.reset_state()
    empty = 0.0 if name == "accuracy" else 1.0  # no token: accuracy 0, perplexity exp(0)
    assert result(metric) == empty
    metric.update_state(MORE_TARGETS, second)
    np.testing.assert_allclose(
        result(metric), reference_metric(name, MORE_TARGETS, second), rtol=1e-5
    )


@pytest.mark.parametrize("name", list(METRICS))
@pytest.mark.parametrize("per", ["token", "sequence"])
def test_sample_weight_weighs_tokens(name: str, per: str):
    rng = np.random.default_rng(3)
    shape = TARGETS.shape if per == "token" else TARGETS.shape[:1]
    weight = rng.uniform(0.0, 2.0, size=shape).astype("float32")
    logits = confident_logits(TARGETS, 5)
    metric = METRICS[name]()
    metric.update_state(TARGETS, logits, sample_weight=weight)
    expected = reference_metric(name, TARGETS, logits, sample_weight=weight)
    np.testing.assert_allclose(result(metric), expected, rtol=1e-5)
    assert not np.isclose(expected, reference_metric(name, TARGETS, logits))


@pytest.mark.parametrize("name", list(METRICS))
def test_names_and_config_round_trip(name: str):
    metric = METRICS[name](pad_id=2)
    assert metric.name == name
    config = metric.get_config()
    assert config["pad_id"] == 2
    restored = keras.metrics.deserialize(keras.metrics.serialize(metric))
    assert isinstance(restored, METRICS[name]) and restored.get_config() == config
    targets = with_pad_id(TARGETS, 2)
    logits = confident_logits(targets, 6)
    restored.update_state(targets, logits)
    np.testing.assert_allclose(
        result(restored), reference_metric(name, targets, logits, 2), rtol=1e-5
    )
