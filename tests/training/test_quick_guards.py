"""Quick guards of training (issue 53, point 12), each against a bug that only slow tests
caught before: checkpoint averaging that reads only the first file, and a loss normalised by
each replica's own tokens instead of the global batch's.

The slow tests run the real thing (`test_checkpoints.py` averages Transformer checkpoints,
`test_losses.py` trains under a `MirroredStrategy` of two logical CPUs in a fresh process);
these run in a fraction of a second: a two-layer model's checkpoints, and the loss on the
halves of a batch inside a stand-in replica context of two replicas.
"""

import types
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_attention.distribute import replicas
from keras_attention.training import LabelSmoothedCrossEntropy
from keras_attention.training.checkpoints import average_checkpoints
from tests.tolerances import assert_close


def small_model() -> keras.Model:
    return keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(2, use_bias=False)]
    )


def test_the_average_reads_every_checkpoint(tmp_path: Path):
    model = small_model()
    rng = np.random.default_rng(0)
    saved = []
    for number in range(3):
        weights = [rng.normal(size=w.shape).astype("float32") for w in model.get_weights()]
        model.set_weights(weights)
        model.save_weights(tmp_path / f"epoch_{number}.weights.h5")
        saved.append(weights)
    model.set_weights([np.zeros_like(w) for w in model.get_weights()])

    average_checkpoints(model, [tmp_path / f"epoch_{number}.weights.h5" for number in range(3)])

    for position, averaged in enumerate(model.get_weights()):
        mean = np.mean([np.float64(weights[position]) for weights in saved], axis=0)
        np.testing.assert_array_equal(averaged, mean.astype("float32"))


# Two replicas' halves of one batch of 4 target rows: 9 real tokens on replica 0, 2 on
# replica 1 (0 is padding), so that the mean of each half's own mean is not the batch mean.
TARGETS = np.array([[3, 1, 6, 2, 5], [5, 5, 4, 4, 0], [2, 0, 0, 0, 0], [6, 0, 0, 0, 0]], "int32")
HALVES = (slice(0, 2), slice(2, 4))
VOCABULARY_SIZE = 7


class ReplicaContext:
    """A stand-in for `tf.distribute`'s replica context in one of two replicas: `all_reduce`
    adds what the other replica holds (`other`)."""

    def __init__(self, other: float):
        self.other = other

    def all_reduce(self, reduce_op, value):
        import tensorflow as tf

        if reduce_op == tf.distribute.ReduceOp.SUM:
            return value + self.other
        if reduce_op == tf.distribute.ReduceOp.MEAN:
            return (value + self.other) / 2
        raise AssertionError(f"unexpected reduction {reduce_op}")


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.distribute only")
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_each_replica_divides_by_the_global_batchs_tokens(monkeypatch, label_smoothing: float):
    import tensorflow as tf

    logits = np.random.default_rng(0).normal(size=(*TARGETS.shape, VOCABULARY_SIZE))
    logits = logits.astype("float32")
    loss = LabelSmoothedCrossEntropy(label_smoothing)
    whole = float(loss(TARGETS, logits))  # one device

    tokens = [float((TARGETS[rows] != 0).sum()) for rows in HALVES]
    per_replica = []
    for replica, rows in enumerate(HALVES):
        with monkeypatch.context() as patch:
            strategy = types.SimpleNamespace(num_replicas_in_sync=2)
            patch.setattr(replicas, "_strategy", lambda strategy=strategy: strategy)
            patch.setattr(tf.distribute, "in_cross_replica_context", lambda: False)
            context = ReplicaContext(other=tokens[1 - replica])
            patch.setattr(tf.distribute, "get_replica_context", lambda context=context: context)
            per_replica.append(float(loss(TARGETS[rows], logits[rows])))

    # Keras sums the replicas' losses (and gradients): the sum is the whole batch's loss.
    assert_close(sum(per_replica), whole)
    # Each half's share is its tokens' sum over all 11 tokens, not its own mean.
    own_means = [float(loss(TARGETS[rows], logits[rows])) for rows in HALVES]
    for share, own_mean, count in zip(per_replica, own_means, tokens, strict=True):
        assert_close(share, own_mean * count / sum(tokens))
