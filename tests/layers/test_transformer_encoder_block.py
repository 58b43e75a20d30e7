"""TransformerEncoderBlock (Section 3.1) against the float64 NumPy reference."""

import re

import numpy as np
import pytest

from keras_attention.layers import TransformerEncoderBlock
from tests.layers import numpy_reference as ref

LENGTH = ref.SOURCE_LEN
PADDING = ref.SOURCE_PADDING


def make_block(seed: int = 7, **kwargs) -> TransformerEncoderBlock:
    """A built encoder block with random weights (gammas, betas and biases included)."""
    block = TransformerEncoderBlock(**{**ref.LAYER_SIZE, "dropout": 0.0, **kwargs})
    return ref.built_layer(block, ref.random_sequence(LENGTH, seed=0), seed=seed)


def reference(
    block: TransformerEncoderBlock,
    x: np.ndarray,
    padding_mask: np.ndarray | None = None,
    attention_mask: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The reference output and weights; padded positions are masked as keys and queries."""
    mask = allowed_keys(padding_mask, attention_mask)
    return ref.encoder_block(ref.to_float64(x), block, mask)


def allowed_keys(padding_mask: np.ndarray | None, attention_mask: np.ndarray | None):
    """The `(batch, len, len)` mask that padding and an explicit mask allow together."""
    return ref.attention_mask(
        ref.BATCH, LENGTH, LENGTH, padding_mask, padding_mask, explicit=attention_mask
    )


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_ln", "pre_ln"])
@pytest.mark.parametrize("use_attention_mask", [False, True], ids=["padding", "padding_and_mask"])
def test_matches_reference(norm_first: bool, use_attention_mask: bool):
    block = make_block(norm_first=norm_first)
    x = ref.random_sequence(LENGTH, seed=1)
    attention_mask = ref.random_attention_mask(LENGTH, LENGTH, 2) if use_attention_mask else None
    expected, _ = reference(block, x, PADDING, attention_mask)
    output = block(x, padding_mask=PADDING, attention_mask=attention_mask)
    ref.assert_close(output, expected)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_ln", "pre_ln"])
def test_attention_weights_per_head(norm_first: bool):
    block = make_block(norm_first=norm_first)
    x = ref.random_sequence(LENGTH, seed=1)
    attention_mask = ref.random_attention_mask(LENGTH, LENGTH, 3)
    output, weights = block(
        x, padding_mask=PADDING, attention_mask=attention_mask, return_attention_scores=True
    )
    expected, expected_weights = reference(block, x, PADDING, attention_mask)
    ref.assert_close(output, expected)
    ref.assert_attention_weights(weights, allowed_keys(PADDING, attention_mask), expected_weights)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_ln", "pre_ln"])
def test_padded_positions_do_not_change_real_positions(norm_first: bool):
    block = make_block(norm_first=norm_first)
    ref.assert_ignores_positions(
        lambda x: block(x, padding_mask=PADDING), ref.random_sequence(LENGTH, 1), ~PADDING, PADDING
    )


@pytest.mark.parametrize("kind", ["embedding", "positional_embedding"])
def test_keras_mask_is_used_and_passed_on(kind: str):
    block = make_block()
    output, values = ref.assert_keras_mask_equals_padding_mask(block, kind, PADDING)
    ref.assert_close(output, reference(block, values, PADDING)[0])


@pytest.mark.parametrize("rate", ["dropout", "attention_dropout", "activation_dropout"])
def test_dropout_only_in_training(rate: str):
    block = make_block(**{rate: 0.5})
    x = ref.random_sequence(LENGTH, seed=1)
    expected, _ = reference(block, x)
    ref.assert_dropout_only_in_training(lambda training: block(x, training=training), expected)


@pytest.mark.parametrize(("kwargs", "message"), ref.INVALID_ARGUMENTS)
def test_invalid_arguments_are_named(kwargs: dict, message: str):
    with pytest.raises(ValueError, match=re.escape(message)):
        make_block(**kwargs)


@pytest.mark.parametrize(
    ("call_kwargs", "message"),
    [
        ({"padding_mask": np.ones((ref.BATCH, LENGTH + 1), bool)}, "padding_mask.shape=(2, 7)"),
        ({"padding_mask": np.ones((ref.BATCH, LENGTH, 1), bool)}, "padding_mask.shape=(2, 6, 1)"),
        (
            {"attention_mask": np.ones((ref.BATCH, LENGTH, LENGTH + 1), bool)},
            "attention_mask.shape=(2, 6, 7)",
        ),
        ({"attention_mask": np.ones((LENGTH, LENGTH), bool)}, "attention_mask.shape=(6, 6)"),
    ],
)
def test_masks_of_the_wrong_shape_are_named(call_kwargs: dict, message: str):
    block = make_block()
    with pytest.raises(ValueError, match=re.escape(message)):
        block(ref.random_sequence(LENGTH, seed=1), **call_kwargs)
