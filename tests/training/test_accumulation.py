"""Gradient accumulation (issue 14): k micro-batches weighted by their token share make the
update of one batch k times larger, with the loss normalised by all its target tokens."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.data.accumulation import token_weighted_updates
from keras_attention.models import Transformer
from keras_attention.training import compile_with_paper_recipe
from keras_attention.training.losses import LabelSmoothedCrossEntropy
from keras_attention.training.schedules import TransformerSchedule
from tests.tolerances import adam_tolerance, tolerance

pytestmark = pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.data pipelines")
VOCABULARY, LENGTH = 20, 6


def micro_batches(seed: int = 0, count: int = 4) -> list:
    """`count` batches of 2 rows and one padded length, with very different token counts."""
    rng = np.random.default_rng(seed)
    batches = []
    for index in range(count):
        source = rng.integers(3, VOCABULARY, (2, LENGTH)).astype("int32")
        target = rng.integers(3, VOCABULARY, (2, LENGTH + 1)).astype("int32")
        real = 2 if index % 2 == 0 else LENGTH + 1  # short, long, short, long
        target[:, real:] = 0
        source[:, real:] = 0
        batches.append(((source, target[:, :-1]), target[:, 1:]))
    return batches


def dataset(batches: list) -> tf.data.Dataset:
    """The batches in order, as a dataset of known cardinality."""
    result = tf.data.Dataset.from_tensors(batches[0])
    for batch in batches[1:]:
        result = result.concatenate(tf.data.Dataset.from_tensors(batch))
    return result


def merged(batches: list, group: int) -> list:
    """Each `group` consecutive batches as one batch of their rows."""
    out = []
    for start in range(0, len(batches), group):
        part = batches[start : start + group]
        out.append(
            (
                (np.concatenate([b[0][0] for b in part]), np.concatenate([b[0][1] for b in part])),
                np.concatenate([b[1] for b in part]),
            )
        )
    return out


def model_with(optimizer_kind: str, accumulate: int, seed: int = 1) -> Transformer:
    keras.utils.set_random_seed(seed)
    model = Transformer(VOCABULARY, num_encoder_layers=1, num_decoder_layers=1, d_model=16,
                        num_heads=2, intermediate_dim=32, dropout=0.0)  # fmt: skip
    model.build()
    if optimizer_kind == "paper":
        compile_with_paper_recipe(model, warmup_steps=2, accumulate_steps=accumulate,
                                  jit_compile=False)  # fmt: skip
    else:
        model.compile(
            optimizer=keras.optimizers.SGD(
                1.0, gradient_accumulation_steps=accumulate if accumulate > 1 else None
            ),
            loss=LabelSmoothedCrossEntropy(0.1),
            jit_compile=False,
        )
    return model


def assert_same_weights(a: keras.Model, b: keras.Model, **tolerance) -> None:
    """Equal weights, but for the keys' biases: softmax ignores a shift shared by all keys,
    so their gradient is zero up to rounding (~1e-9), which Adam (epsilon 1e-9) turns into
    steps of either sign."""
    for x, y in zip(a.weights, b.weights, strict=True):
        if not x.path.endswith("key/bias"):
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), err_msg=x.path, **tolerance)


def test_the_weights_are_the_token_shares():
    batches = micro_batches()
    weighted = list(token_weighted_updates(dataset(batches), 2).as_numpy_iterator())
    assert len(weighted) == 4
    for start in (0, 2):
        counts = [np.count_nonzero(batches[i][1]) for i in (start, start + 1)]
        for offset, count in enumerate(counts):
            (_, _), target, weight = weighted[start + offset]
            np.testing.assert_array_equal(target, batches[start + offset][1])
            assert weight.shape == target.shape
            np.testing.assert_allclose(weight, 2 * count / sum(counts), rtol=1e-6)


def test_a_last_partial_group_is_left_out_and_the_count_stays_known():
    ids = tf.data.Dataset.from_tensor_slices(np.ones((5, 2, LENGTH), "int32"))
    batches = ids.map(lambda y: ((y, y), y))
    grouped = token_weighted_updates(batches, 2)
    assert int(grouped.cardinality()) == 4 and len(list(grouped)) == 4
    with pytest.raises(ValueError, match="accumulate_steps"):
        token_weighted_updates(batches, 0)


@pytest.mark.parametrize("optimizer_kind", ["sgd", "paper"])
def test_accumulated_micro_batches_make_the_update_of_one_large_batch(optimizer_kind: str):
    batches = micro_batches()
    accumulated = model_with(optimizer_kind, accumulate=2)
    accumulated.fit(token_weighted_updates(dataset(batches), 2), epochs=1, verbose=0)
    whole = model_with(optimizer_kind, accumulate=1)
    whole.fit(dataset(merged(batches, 2)), epochs=1, verbose=0)
    # Two updates each: the same weights, the same optimizer (Adam's) step count.
    assert int(accumulated.optimizer.iterations) == int(whole.optimizer.iterations) == 2
    if optimizer_kind == "sgd":
        assert_same_weights(accumulated, whole, **tolerance("float32"))
    else:  # Adam's steps follow the learning rates, not the gradients' rounding
        schedule = TransformerSchedule(16, warmup_steps=2)  # the recipe's, as in `model_with`
        rates = [float(schedule(step)) for step in range(2)]
        assert_same_weights(accumulated, whole, **adam_tolerance(rates))


def test_without_the_token_weights_the_update_differs():
    """Keras's plain mean of the micro-batches' gradients weighs the short one's tokens more:
    the check above can fail."""
    batches = micro_batches()
    plain = model_with("sgd", accumulate=2)
    plain.fit(dataset(batches), epochs=1, verbose=0)
    whole = model_with("sgd", accumulate=1)
    whole.fit(dataset(merged(batches, 2)), epochs=1, verbose=0)
    with pytest.raises(AssertionError):
        assert_same_weights(plain, whole, **tolerance("float32"))


def test_the_schedule_counts_updates():
    micro = TransformerSchedule(16, warmup_steps=4, accumulate_steps=3)
    plain = TransformerSchedule(16, warmup_steps=4)
    for iteration in range(12):
        assert float(micro(iteration)) == pytest.approx(float(plain(iteration // 3)))
    assert micro.get_config()["accumulate_steps"] == 3
