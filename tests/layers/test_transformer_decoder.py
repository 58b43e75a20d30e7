"""TransformerDecoder, the stack of decoder blocks (Section 3.1), against the NumPy reference."""

import re

import numpy as np
import pytest

from keras_attention.layers import TransformerDecoder, TransformerEncoder
from tests.layers import numpy_reference as ref

T, S = ref.TARGET_LEN, ref.SOURCE_LEN
NUM_LAYERS = 2
NORM_FIRST = pytest.mark.parametrize("norm_first", [False, True], ids=["post_ln", "pre_ln"])
WITH_ENCODER = pytest.mark.parametrize(
    "with_encoder", [True, False], ids=["encoder_decoder", "decoder_only"]
)


def make_decoder(with_encoder: bool = True, seed: int = 13, **kwargs) -> TransformerDecoder:
    """A built two-layer decoder (decoder-only unless `with_encoder`) with random weights."""
    decoder = TransformerDecoder(
        **{"num_layers": NUM_LAYERS, **ref.LAYER_SIZE, "dropout": 0.0, **kwargs}
    )
    inputs = [ref.random_sequence(T, seed=0)] + [ref.random_sequence(S, seed=0)] * with_encoder
    return ref.built_layer(decoder, *inputs, seed=seed)


def source_for(decoder: TransformerDecoder) -> np.ndarray | None:
    """A random encoder output when the decoder's blocks have cross-attention."""
    return ref.random_sequence(S, seed=2) if decoder.blocks[0].has_cross_attention else None


def reference(
    decoder: TransformerDecoder,
    target: np.ndarray,
    source: np.ndarray | None,
    source_padding: np.ndarray | None = None,
    target_padding: np.ndarray | None = ref.TARGET_PADDING,
) -> tuple[np.ndarray, list]:
    """The reference output and per-layer weights of a causal call."""
    self_mask, cross_mask = allowed_keys(source_padding, target_padding)
    source = None if source is None else ref.to_float64(source)
    return ref.decoder_stack(ref.to_float64(target), decoder, self_mask, source, cross_mask)


def allowed_keys(
    source_padding: np.ndarray | None, target_padding: np.ndarray | None = ref.TARGET_PADDING
) -> tuple[np.ndarray, np.ndarray]:
    """Self- and cross-attention masks of a causal call; padded target positions are
    masked as keys and as queries."""
    padding = target_padding
    self_mask = ref.attention_mask(ref.BATCH, T, T, padding, padding, causal=True)
    return self_mask, ref.attention_mask(ref.BATCH, T, S, padding, source_padding)


@NORM_FIRST
@WITH_ENCODER
def test_matches_reference_with_weights_per_layer(norm_first: bool, with_encoder: bool):
    decoder = make_decoder(with_encoder, norm_first=norm_first)
    assert (decoder.final_norm is not None) == norm_first
    target, source = ref.random_sequence(T, seed=1), source_for(decoder)
    source_padding = ref.SOURCE_PADDING if with_encoder else None
    masks = {"decoder_padding_mask": ref.TARGET_PADDING, "encoder_padding_mask": source_padding}
    output, scores = decoder(target, source, **masks, return_attention_scores=True)
    expected, expected_scores = reference(decoder, target, source, source_padding)
    ref.assert_close(output, expected)
    ref.assert_close(decoder(target, source, **masks), expected)
    assert isinstance(scores, list) and len(scores) == NUM_LAYERS
    allowed = dict(
        zip(["self_attention", "cross_attention"], allowed_keys(source_padding), strict=True)
    )
    for layer_scores, layer_expected in zip(scores, expected_scores, strict=True):
        assert set(layer_scores) == set(layer_expected)
        for name, weights in layer_scores.items():
            ref.assert_attention_weights(weights, allowed[name], layer_expected[name])


@WITH_ENCODER
def test_future_target_tokens_never_change_earlier_outputs(with_encoder: bool):
    decoder = make_decoder(with_encoder, norm_first=True)
    source = source_for(decoder)
    ref.assert_causal(lambda changed: decoder(changed, source), ref.random_sequence(T, seed=1))


def test_padded_source_positions_never_change_outputs():
    decoder = make_decoder()
    target = ref.random_sequence(T, seed=1)
    ref.assert_ignores_positions(
        lambda changed: decoder(target, changed, encoder_padding_mask=ref.SOURCE_PADDING),
        source_for(decoder),
        ~ref.SOURCE_PADDING,
        np.ones((ref.BATCH, T), dtype=bool),
    )


@pytest.mark.parametrize("kind", ["embedding", "positional_embedding"])
def test_keras_masks_flow_from_embeddings_through_the_encoder(kind: str):
    source, source_values = ref.keras_masked_embedding(
        kind, ref.token_ids(ref.SOURCE_PADDING, 3), seed=4
    )
    target, target_values = ref.keras_masked_embedding(
        kind, ref.token_ids(ref.TARGET_PADDING, 5), seed=6
    )
    encoder = ref.built_layer(
        TransformerEncoder(num_layers=NUM_LAYERS, **ref.LAYER_SIZE), source_values
    )
    decoder = make_decoder()
    output = decoder(target, encoder(source))
    encoded = encoder(source_values, padding_mask=ref.SOURCE_PADDING)
    explicit = decoder(
        target_values,
        encoded,
        decoder_padding_mask=ref.TARGET_PADDING,
        encoder_padding_mask=ref.SOURCE_PADDING,
    )
    ref.assert_close(output, explicit)
    ref.assert_close(
        output, reference(decoder, target_values, ref.as_float64(encoded), ref.SOURCE_PADDING)[0]
    )


@NORM_FIRST
@pytest.mark.parametrize("append", [False, True], ids=["fixed_cache", "growing_cache"])
@pytest.mark.parametrize("setting", ["cross_attention", "source_padding", "decoder_only"])
def test_cached_decoding_equals_full_causal_call(norm_first: bool, setting: str, append: bool):
    decoder = make_decoder(setting != "decoder_only", norm_first=norm_first)
    target, source = ref.random_sequence(T, seed=1), source_for(decoder)
    source_padding = ref.SOURCE_PADDING if setting == "source_padding" else None
    full = decoder(target, source, encoder_padding_mask=source_padding)
    ref.assert_close(full, reference(decoder, target, source, source_padding, None)[0])
    stepwise = ref.decode_one_position_at_a_time(decoder, target, source, source_padding, append)
    ref.assert_close(stepwise, full)


@pytest.mark.parametrize("rate", ["dropout", "attention_dropout", "activation_dropout"])
def test_dropout_only_in_training(rate: str):
    decoder = make_decoder(**{rate: 0.4})
    target, source = ref.random_sequence(T, seed=1), source_for(decoder)
    expected, _ = reference(decoder, target, source, None, None)
    ref.assert_dropout_only_in_training(
        lambda training: decoder(target, source, training=training), expected
    )


def test_decoder_only_stack_has_no_cross_attention():
    decoder = make_decoder(with_encoder=False)
    assert not any(block.has_cross_attention for block in decoder.blocks)
    assert not any("cross_attention" in weight.path for weight in decoder.weights)
    with pytest.raises(ValueError, match="without cross-attention"):
        decoder(ref.random_sequence(T, seed=1), ref.random_sequence(S, seed=2))


def test_cross_attention_stack_needs_encoder_sequence():
    decoder = make_decoder()
    with pytest.raises(ValueError, match="encoder_sequence=None"):
        decoder(ref.random_sequence(T, seed=1))


@pytest.mark.parametrize(
    ("kwargs", "message"), [*ref.INVALID_ARGUMENTS, ({"num_layers": 0}, "num_layers=0")]
)
def test_invalid_arguments_are_named(kwargs: dict, message: str):
    with pytest.raises(ValueError, match=re.escape(message)):
        make_decoder(**kwargs)


@pytest.mark.parametrize(
    ("call_kwargs", "message"),
    [
        ({"decoder_padding_mask": np.ones((ref.BATCH, S), bool)}, "decoder_padding_mask.shape"),
        ({"encoder_padding_mask": np.ones((ref.BATCH, T), bool)}, "encoder_padding_mask.shape"),
        ({"decoder_attention_mask": np.ones((ref.BATCH, T, S), bool)}, "decoder_attention_mask"),
        ({"encoder_attention_mask": np.ones((ref.BATCH, S, S), bool)}, "encoder_attention_mask"),
    ],
)
def test_masks_of_the_wrong_shape_are_named(call_kwargs: dict, message: str):
    decoder = make_decoder()
    with pytest.raises(ValueError, match=re.escape(message)):
        decoder(ref.random_sequence(T, seed=1), source_for(decoder), **call_kwargs)


@pytest.mark.parametrize("cache_name", ["self_attention_cache", "cross_attention_cache"])
def test_cache_lists_of_the_wrong_length_are_named(cache_name: str):
    decoder = make_decoder()
    source = source_for(decoder)
    caches = {
        "self_attention_cache": decoder.initial_cache(ref.BATCH, T),
        "self_attention_cache_update_index": 0,
        "cross_attention_cache": decoder.compute_cross_attention_cache(source),
    }
    caches[cache_name] = caches[cache_name][:1]
    with pytest.raises(
        ValueError, match=re.escape(f"{cache_name} must hold one cache per block (2); got 1")
    ):
        decoder(ref.random_sequence(1, seed=1), source, **caches)


def test_self_attention_cache_needs_update_index():
    decoder = make_decoder()
    with pytest.raises(ValueError, match="self_attention_cache_update_index=None"):
        decoder(
            ref.random_sequence(1, seed=1),
            source_for(decoder),
            self_attention_cache=decoder.initial_cache(ref.BATCH, T),
        )
