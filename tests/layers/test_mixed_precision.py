"""Every layer under the `mixed_float16` and `mixed_bfloat16` dtype policies.

Torch on CPU has float16 and bfloat16 kernels for every op these layers use, so nothing is
skipped on either backend.
"""

import keras
import numpy as np
import pytest

import keras_attention as ka
from tests.conftest import to_numpy
from tests.layers.layer_cases import (
    BATCH,
    CASE_IDS,
    D_MODEL,
    LAYER_CASES,
    SOURCE_LEN,
    SOURCE_PADDING,
    TARGET_LEN,
    TARGET_PADDING,
    LayerCase,
    padding_mask,
    sequence,
)
from tests.tolerances import assert_close, tolerance

POLICIES = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}
# Magnitudes of the inputs: ordinary, and large enough to overflow float16 if logits or the
# mask value were handled in float16 carelessly.
SCALES = [1.0, 100.0]
NUM_HEADS, INTERMEDIATE_DIM = 2, 24


@pytest.fixture(params=list(POLICIES))
def policy(request) -> str:
    """Sets a mixed dtype policy for the test and resets it to float32 afterwards."""
    keras.mixed_precision.set_dtype_policy(request.param)
    yield request.param
    keras.mixed_precision.set_dtype_policy("float32")


def as_float64(x) -> np.ndarray:
    return to_numpy(keras.ops.cast(x, "float32")).astype("float64")


def fully_masked_row(query_len: int, key_len: int) -> np.ndarray:
    """`(BATCH, query_len, key_len)`, all True except query 0 of example 1 (sees no key)."""
    mask = np.ones((BATCH, query_len, key_len), dtype=bool)
    mask[1, 0, :] = False
    return mask


def causal(length: int) -> np.ndarray:
    return np.tril(np.ones((length, length), dtype=bool))[None]


def multi_head_scores(scale: float) -> tuple:
    rng = np.random.default_rng(1)
    key_padding = padding_mask(SOURCE_LEN, SOURCE_PADDING)
    row_mask = fully_masked_row(TARGET_LEN, SOURCE_LEN)
    output, scores = ka.MultiHeadAttention(NUM_HEADS)(
        sequence(rng, TARGET_LEN, D_MODEL, scale),
        sequence(rng, SOURCE_LEN, D_MODEL, scale),
        value_mask=key_padding,
        attention_mask=row_mask,
        return_attention_scores=True,
    )
    all_real = np.ones((BATCH, TARGET_LEN), dtype=bool)
    return output, [(scores, key_padding[:, None, :] & row_mask, all_real)]


def encoder_scores(layer: keras.layers.Layer, scale: float) -> tuple:
    rng = np.random.default_rng(2)
    key_padding = padding_mask(SOURCE_LEN, SOURCE_PADDING)
    row_mask = fully_masked_row(SOURCE_LEN, SOURCE_LEN)
    output, scores = layer(
        sequence(rng, SOURCE_LEN, D_MODEL, scale),
        padding_mask=key_padding,
        attention_mask=row_mask,
        return_attention_scores=True,
    )
    expected = key_padding[:, None, :] & row_mask
    scores = scores if isinstance(scores, list) else [scores]
    return output, [(block_scores, expected, key_padding) for block_scores in scores]


def decoder_scores(layer: keras.layers.Layer, scale: float) -> tuple:
    rng = np.random.default_rng(3)
    target_padding = padding_mask(TARGET_LEN, TARGET_PADDING)
    source_padding = padding_mask(SOURCE_LEN, SOURCE_PADDING)
    row_mask = fully_masked_row(TARGET_LEN, SOURCE_LEN)
    output, scores = layer(
        sequence(rng, TARGET_LEN, D_MODEL, scale),
        sequence(rng, SOURCE_LEN, D_MODEL, scale),
        decoder_padding_mask=target_padding,
        encoder_padding_mask=source_padding,
        encoder_attention_mask=row_mask,
        return_attention_scores=True,
    )
    self_mask = causal(TARGET_LEN) & target_padding[:, None, :]
    cross_mask = source_padding[:, None, :] & row_mask
    scores = scores if isinstance(scores, list) else [scores]
    return output, [
        pair
        for block_scores in scores
        for pair in (
            (block_scores["self_attention"], self_mask, target_padding),
            (block_scores["cross_attention"], cross_mask, target_padding),
        )
    ]


# Layers with attention, built with their defaults (post-LN, as in the paper, so that the
# inputs' magnitude reaches the attention logits), and a call that returns
# `(output, [(weights, keys each query may see, real queries), ...])`.
ATTENTION_CALLS = {
    "MultiHeadAttention": multi_head_scores,
    "TransformerEncoderBlock": lambda scale: encoder_scores(
        ka.TransformerEncoderBlock(num_heads=NUM_HEADS, intermediate_dim=INTERMEDIATE_DIM), scale
    ),
    "TransformerEncoder": lambda scale: encoder_scores(
        ka.TransformerEncoder(num_layers=2, num_heads=NUM_HEADS, intermediate_dim=INTERMEDIATE_DIM),
        scale,
    ),
    "TransformerDecoderBlock": lambda scale: decoder_scores(
        ka.TransformerDecoderBlock(num_heads=NUM_HEADS, intermediate_dim=INTERMEDIATE_DIM), scale
    ),
    "TransformerDecoder": lambda scale: decoder_scores(
        ka.TransformerDecoder(num_layers=2, num_heads=NUM_HEADS, intermediate_dim=INTERMEDIATE_DIM),
        scale,
    ),
}


@pytest.mark.parametrize("case", LAYER_CASES, ids=CASE_IDS)
def test_every_layer_computes_in_the_policy_dtype_with_float32_variables(
    policy: str, case: LayerCase
):
    compute_dtype = POLICIES[policy]
    layer = case.make_layer()
    assert layer.compute_dtype == compute_dtype
    assert layer.variable_dtype == "float32"
    outputs = case.call(layer, case.sample_inputs())
    for output in outputs:
        assert keras.backend.standardize_dtype(output.dtype) == compute_dtype
        assert np.isfinite(as_float64(output)).all()
    variable_dtypes = {keras.backend.standardize_dtype(v.dtype) for v in layer.weights}
    assert variable_dtypes <= {"float32"}


@pytest.mark.parametrize("case", LAYER_CASES, ids=CASE_IDS)
def test_mixed_outputs_are_close_to_float32_outputs(policy: str, case: LayerCase):
    mixed = case.make_layer()
    inputs = case.sample_inputs()
    mixed_outputs = case.call(mixed, inputs)
    exact = case.make_layer(dtype="float32")
    case.call(exact, inputs)  # builds the float32 twin
    exact.set_weights(mixed.get_weights())
    exact_outputs = case.call(exact, inputs)
    for have, want in zip(mixed_outputs, exact_outputs, strict=True):
        want = as_float64(want)
        assert_close(as_float64(have), want, dtype=POLICIES[policy])


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("name", list(ATTENTION_CALLS))
def test_masked_positions_get_exactly_zero_attention_weight(policy: str, name: str, scale: float):
    output, weights_and_masks = ATTENTION_CALLS[name](scale)
    assert keras.backend.standardize_dtype(output.dtype) == POLICIES[policy]
    assert np.isfinite(as_float64(output)).all()
    assert weights_and_masks
    fully_masked_queries = 0
    for weights, allowed, real_queries in weights_and_masks:
        weights = as_float64(weights)  # (B, H, Tq, Tk)
        allowed = np.broadcast_to(allowed[:, None], weights.shape)
        assert not np.isnan(weights).any()
        assert (weights[~allowed] == 0).all()
        row_sums = weights.sum(axis=-1)  # (B, H, Tq)
        # A row sums to 1, or to 0 when the query may attend to no key (or is padding).
        ones = np.isclose(row_sums, 1.0, **tolerance(POLICIES[policy]))
        assert np.all(ones | (row_sums == 0))
        has_key = allowed.any(axis=-1)
        real = np.broadcast_to(real_queries[:, None, :], row_sums.shape)
        assert_close(row_sums[has_key & real], 1.0, dtype=POLICIES[policy])
        assert (row_sums[~has_key] == 0).all()
        fully_masked_queries += int((~has_key).sum())
    assert fully_masked_queries > 0, "the test needs a query that may attend to no key"
