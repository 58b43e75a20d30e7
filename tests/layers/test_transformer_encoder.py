"""TransformerEncoder, the stack of encoder blocks (Section 3.1), against the NumPy reference."""

import re

import keras
import numpy as np
import pytest

from keras_attention.layers import TransformerEncoder
from tests.layers import numpy_reference as ref

LENGTH = ref.SOURCE_LEN
PADDING = ref.SOURCE_PADDING
NUM_LAYERS = 2


def make_encoder(seed: int = 11, **kwargs) -> TransformerEncoder:
    """A built two-layer encoder with random weights (final norm included in pre-LN)."""
    encoder = TransformerEncoder(**{"num_layers": NUM_LAYERS, **ref.LAYER_SIZE, **kwargs})
    return ref.built_layer(encoder, ref.random_sequence(LENGTH, seed=0), seed=seed)


def allowed_keys(attention_mask: np.ndarray | None = None) -> np.ndarray:
    """Keys each query may attend to under `PADDING` and an optional explicit mask."""
    return ref.attention_mask(ref.BATCH, LENGTH, LENGTH, PADDING, PADDING, explicit=attention_mask)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_ln", "pre_ln"])
@pytest.mark.parametrize("use_attention_mask", [False, True], ids=["padding", "padding_and_mask"])
def test_matches_reference_with_weights_per_layer(norm_first: bool, use_attention_mask: bool):
    encoder = make_encoder(norm_first=norm_first, dropout=0.0)
    assert (encoder.final_norm is not None) == norm_first
    x = ref.random_sequence(LENGTH, seed=1)
    attention_mask = ref.random_attention_mask(LENGTH, LENGTH, 2) if use_attention_mask else None
    output, weights = encoder(
        x, padding_mask=PADDING, attention_mask=attention_mask, return_attention_scores=True
    )
    expected, expected_weights = ref.encoder_stack(
        ref.to_float64(x), encoder, allowed_keys(attention_mask)
    )
    ref.assert_close(output, expected)
    ref.assert_close(encoder(x, padding_mask=PADDING, attention_mask=attention_mask), expected)
    assert isinstance(weights, list) and len(weights) == NUM_LAYERS
    for layer_weights, layer_expected in zip(weights, expected_weights, strict=True):
        ref.assert_attention_weights(layer_weights, allowed_keys(attention_mask), layer_expected)


def test_padded_positions_do_not_change_real_positions():
    encoder = make_encoder(norm_first=True)
    x = ref.random_sequence(LENGTH, seed=1)
    ref.assert_ignores_positions(
        lambda changed: encoder(changed, padding_mask=PADDING), x, ~PADDING, PADDING
    )


@pytest.mark.parametrize("kind", ["embedding", "positional_embedding"])
def test_keras_mask_is_used_and_passed_on(kind: str):
    ref.assert_keras_mask_equals_padding_mask(make_encoder(), kind, PADDING)


@pytest.mark.parametrize("rate", ["dropout", "attention_dropout", "activation_dropout"])
def test_dropout_only_in_training(rate: str):
    encoder = make_encoder(**{"dropout": 0.0, rate: 0.4})
    x = ref.random_sequence(LENGTH, seed=1)
    expected, _ = ref.encoder_stack(ref.to_float64(x), encoder)
    ref.assert_dropout_only_in_training(lambda training: encoder(x, training=training), expected)


@pytest.mark.parametrize(
    ("kwargs", "message"), [*ref.INVALID_ARGUMENTS, ({"num_layers": -1}, "num_layers=-1")]
)
def test_invalid_arguments_are_named(kwargs: dict, message: str):
    with pytest.raises(ValueError, match=re.escape(message)):
        make_encoder(**kwargs)


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("padding_mask", (ref.BATCH + 1, LENGTH)),
        ("attention_mask", (ref.BATCH, LENGTH - 1, LENGTH)),
    ],
)
def test_masks_of_the_wrong_shape_are_named(name: str, shape: tuple):
    encoder = make_encoder()
    with pytest.raises(ValueError, match=re.escape(f"{name}.shape={shape}")):
        encoder(ref.random_sequence(LENGTH, seed=1), **{name: np.ones(shape, bool)})


def test_seeded_initializer_gives_each_block_its_own_weights():
    encoder = TransformerEncoder(
        num_layers=2,
        num_heads=2,
        intermediate_dim=8,
        kernel_initializer=keras.initializers.GlorotUniform(seed=3),
    )
    encoder(np.zeros((1, 3, 8), "float32"))
    first, second = (
        keras.ops.convert_to_numpy(block.self_attention.query_dense.kernel.value)
        for block in encoder.blocks
    )
    assert not np.allclose(first, second)
