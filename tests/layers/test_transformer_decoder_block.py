"""TransformerDecoderBlock (Section 3.1) against the float64 NumPy reference."""

import re

import numpy as np
import pytest

from keras_attention.layers import TransformerDecoderBlock
from tests.layers import numpy_reference as ref

T, S = ref.TARGET_LEN, ref.SOURCE_LEN
NORM_FIRST = pytest.mark.parametrize("norm_first", [False, True], ids=["post_ln", "pre_ln"])
WITH_ENCODER = pytest.mark.parametrize(
    "with_encoder", [True, False], ids=["encoder_decoder", "decoder_only"]
)
PADDING = {"decoder_padding_mask": ref.TARGET_PADDING, "encoder_padding_mask": ref.SOURCE_PADDING}


def make_block(with_encoder: bool = True, seed: int = 7, **kwargs) -> TransformerDecoderBlock:
    """A built decoder block (with cross-attention when `with_encoder`) with random weights."""
    block = TransformerDecoderBlock(**{**ref.LAYER_SIZE, "dropout": 0.0, **kwargs})
    inputs = [ref.random_sequence(T, seed=0)]
    if with_encoder:
        inputs.append(ref.random_sequence(S, seed=0))
    return ref.built_layer(block, *inputs, seed=seed)


def inputs_for(block: TransformerDecoderBlock) -> tuple[np.ndarray, np.ndarray | None]:
    """A random target, and a random source when the block has cross-attention."""
    source = ref.random_sequence(S, seed=2) if block.has_cross_attention else None
    return ref.random_sequence(T, seed=1), source


def reference(
    block: TransformerDecoderBlock,
    target: np.ndarray,
    source: np.ndarray | None,
    decoder_padding_mask: np.ndarray | None = None,
    encoder_padding_mask: np.ndarray | None = None,
    decoder_attention_mask: np.ndarray | None = None,
    encoder_attention_mask: np.ndarray | None = None,
) -> tuple[np.ndarray, dict]:
    """The reference output and weights of a causal call."""
    self_mask, cross_mask = allowed_keys(
        decoder_padding_mask, encoder_padding_mask, decoder_attention_mask, encoder_attention_mask
    )
    source = None if source is None else ref.to_float64(source)
    return ref.decoder_block(ref.to_float64(target), block, self_mask, source, cross_mask)


def allowed_keys(
    decoder_padding_mask: np.ndarray | None = None,
    encoder_padding_mask: np.ndarray | None = None,
    decoder_attention_mask: np.ndarray | None = None,
    encoder_attention_mask: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The self-attention `(B, T, T)` and cross-attention `(B, T, S)` masks of a causal call;
    padded target positions are masked as keys and as queries."""
    self_mask = ref.attention_mask(
        ref.BATCH,
        T,
        T,
        decoder_padding_mask,
        decoder_padding_mask,
        causal=True,
        explicit=decoder_attention_mask,
    )
    cross_mask = ref.attention_mask(
        ref.BATCH, T, S, decoder_padding_mask, encoder_padding_mask, explicit=encoder_attention_mask
    )
    return self_mask, cross_mask


@NORM_FIRST
@pytest.mark.parametrize("use_attention_masks", [False, True], ids=["padding", "padding_and_masks"])
def test_matches_reference(norm_first: bool, use_attention_masks: bool):
    block = make_block(norm_first=norm_first)
    target, source = inputs_for(block)
    explicit = {}
    if use_attention_masks:
        explicit = {
            "decoder_attention_mask": ref.random_attention_mask(T, T, seed=3),
            "encoder_attention_mask": ref.random_attention_mask(T, S, seed=4),
        }
    expected, _ = reference(block, target, source, **PADDING, **explicit)
    ref.assert_close(block(target, source, **PADDING, **explicit), expected)


@NORM_FIRST
def test_decoder_only_block_has_no_cross_attention(norm_first: bool):
    block = make_block(with_encoder=False, norm_first=norm_first)
    assert not block.has_cross_attention
    assert not any("cross_attention" in weight.path for weight in block.weights)
    target, _ = inputs_for(block)
    expected, _ = reference(block, target, None, ref.TARGET_PADDING)
    ref.assert_close(block(target, decoder_padding_mask=ref.TARGET_PADDING), expected)


@NORM_FIRST
@WITH_ENCODER
def test_attention_weights_per_head(norm_first: bool, with_encoder: bool):
    block = make_block(with_encoder, norm_first=norm_first)
    target, source = inputs_for(block)
    output, scores = block(target, source, **PADDING, return_attention_scores=True)
    expected, expected_scores = reference(block, target, source, **PADDING)
    ref.assert_close(output, expected)
    expected_names = {"self_attention", "cross_attention"} if with_encoder else {"self_attention"}
    assert set(scores) == set(expected_scores) == expected_names
    allowed = dict(zip(["self_attention", "cross_attention"], allowed_keys(**PADDING), strict=True))
    for name, weights in scores.items():
        ref.assert_attention_weights(weights, allowed[name], expected_scores[name])


@WITH_ENCODER
def test_future_target_tokens_never_change_earlier_outputs(with_encoder: bool):
    block = make_block(with_encoder)
    target, source = inputs_for(block)
    ref.assert_causal(lambda changed: block(changed, source), target)


def test_padded_source_positions_never_change_outputs():
    block = make_block()
    target, source = inputs_for(block)
    every_target_position = np.ones((ref.BATCH, T), dtype=bool)
    ref.assert_ignores_positions(
        lambda changed: block(target, changed, encoder_padding_mask=ref.SOURCE_PADDING),
        source,
        ~ref.SOURCE_PADDING,
        every_target_position,
    )


@WITH_ENCODER
def test_padded_target_positions_never_change_real_ones(with_encoder: bool):
    # Padding inside the sequence, so that later real positions could see it.
    padding = np.array([[True, False, True, True, False], [True, True, False, True, True]])
    block = make_block(with_encoder)
    target, source = inputs_for(block)
    ref.assert_ignores_positions(
        lambda changed: block(changed, source, decoder_padding_mask=padding),
        target,
        ~padding,
        padding,
    )


@pytest.mark.parametrize("kind", ["embedding", "positional_embedding"])
def test_keras_masks_are_used(kind: str):
    target_ids = ref.token_ids(ref.TARGET_PADDING, seed=3)
    source_ids = ref.token_ids(ref.SOURCE_PADDING, seed=4)
    target, target_values = ref.keras_masked_embedding(kind, target_ids, seed=5)
    source, source_values = ref.keras_masked_embedding(kind, source_ids, seed=6)
    block = make_block()
    output = block(target, source)
    ref.assert_close(output, block(target_values, source_values, **PADDING))
    ref.assert_close(output, reference(block, target_values, source_values, **PADDING)[0])


@NORM_FIRST
@pytest.mark.parametrize("append", [False, True], ids=["fixed_cache", "growing_cache"])
@pytest.mark.parametrize("setting", ["cross_attention", "source_padding", "decoder_only"], ids=str)
def test_cached_decoding_equals_full_causal_call(norm_first: bool, setting: str, append: bool):
    block = make_block(setting != "decoder_only", norm_first=norm_first)
    target, source = inputs_for(block)
    source_padding = ref.SOURCE_PADDING if setting == "source_padding" else None
    full = block(target, source, encoder_padding_mask=source_padding)
    ref.assert_close(full, reference(block, target, source, None, source_padding)[0])
    stepwise = ref.decode_one_position_at_a_time(block, target, source, source_padding, append)
    ref.assert_close(stepwise, full)


def test_cache_is_returned_not_updated_in_place():
    block = make_block()
    target, source = inputs_for(block)
    empty = block.initial_cache(ref.BATCH, T)
    assert tuple(empty.shape) == (2, ref.BATCH, ref.NUM_HEADS, T, ref.D_MODEL // ref.NUM_HEADS)
    _, cache = block(
        target[:, :2], source, self_attention_cache=empty, self_attention_cache_update_index=0
    )
    cache = ref.as_float64(cache)
    assert np.any(cache[:, :, :, :2] != 0) and np.all(cache[:, :, :, 2:] == 0)
    np.testing.assert_array_equal(ref.as_float64(empty), 0.0)


@pytest.mark.parametrize("rate", ["dropout", "attention_dropout", "activation_dropout"])
def test_dropout_only_in_training(rate: str):
    block = make_block(**{rate: 0.5})
    target, source = inputs_for(block)
    expected, _ = reference(block, target, source)
    ref.assert_dropout_only_in_training(
        lambda training: block(target, source, training=training), expected
    )


@pytest.mark.parametrize(("kwargs", "message"), ref.INVALID_ARGUMENTS)
def test_invalid_arguments_are_named(kwargs: dict, message: str):
    with pytest.raises(ValueError, match=re.escape(message)):
        make_block(**kwargs)


def _wrong_shapes() -> list:
    """(call arguments, words the error must contain) for masks of the wrong shape."""
    batch = ref.BATCH
    return [
        ({"decoder_padding_mask": np.ones((batch, T + 1), bool)}, "decoder_padding_mask.shape"),
        ({"encoder_padding_mask": np.ones((batch, S - 1), bool)}, "encoder_padding_mask.shape"),
        ({"decoder_attention_mask": np.ones((batch, T, S), bool)}, "decoder_attention_mask.shape"),
        ({"encoder_attention_mask": np.ones((batch, T, T), bool)}, "encoder_attention_mask.shape"),
        ({"encoder_attention_mask": np.ones((T, S), bool)}, "encoder_attention_mask.shape"),
    ]


@pytest.mark.parametrize(("call_kwargs", "message"), _wrong_shapes())
def test_masks_of_the_wrong_shape_are_named(call_kwargs: dict, message: str):
    block = make_block()
    target, source = inputs_for(block)
    with pytest.raises(ValueError, match=re.escape(message)):
        block(target, source, **call_kwargs)


def test_cross_attention_block_needs_encoder_sequence():
    block = make_block()
    with pytest.raises(ValueError, match="encoder_sequence=None"):
        block(ref.random_sequence(T, seed=1))


def test_decoder_only_block_rejects_encoder_sequence():
    block = make_block(with_encoder=False)
    with pytest.raises(ValueError, match="without cross-attention"):
        block(ref.random_sequence(T, seed=1), ref.random_sequence(S, seed=2))


def test_self_attention_cache_needs_update_index():
    block = make_block()
    target, source = inputs_for(block)
    cache = block.initial_cache(ref.BATCH, T)
    with pytest.raises(ValueError, match="self_attention_cache_update_index=None"):
        block(target[:, :1], source, self_attention_cache=cache)


@NORM_FIRST
def test_hypotheses_share_their_sentence_cross_attention_cache(norm_first: bool):
    """Three hypotheses per sentence (rows 3b..3b+2 of the decoder's batch) attend over their
    sentence's one cache row: the float64 reference with the source repeated per hypothesis."""
    block = make_block(norm_first=norm_first)
    copies, rows = 3, 3 * ref.BATCH
    target = np.random.default_rng(4).normal(size=(rows, T, ref.D_MODEL)).astype("float32")
    source = ref.random_sequence(S, seed=2)
    explicit = np.random.default_rng(5).random((rows, T, S)) < 0.7
    output, _, scores = block(
        target,
        source,
        encoder_padding_mask=ref.SOURCE_PADDING,
        encoder_attention_mask=explicit,
        self_attention_cache=block.initial_cache(rows, 0),
        self_attention_cache_update_index=0,
        append_to_cache=True,
        cross_attention_cache=block.compute_cross_attention_cache(source),
        encoder_group_size=copies,
        return_attention_scores=True,
    )
    source_padding = np.repeat(ref.SOURCE_PADDING, copies, axis=0)
    self_mask = ref.attention_mask(rows, T, T, causal=True)
    cross_mask = ref.attention_mask(rows, T, S, key_padding=source_padding, explicit=explicit)
    repeated = ref.to_float64(np.repeat(source, copies, axis=0))
    expected, expected_scores = ref.decoder_block(
        ref.to_float64(target), block, self_mask, repeated, cross_mask
    )
    ref.assert_close(output, expected)
    ref.assert_close(scores["cross_attention"], expected_scores["cross_attention"])


@pytest.mark.parametrize("with_cache", [False, True], ids=["encoder_sequence", "cross_cache"])
def test_hypotheses_without_their_group_size_are_refused(with_cache: bool):
    """Rows that do not match the encoder's rows times `encoder_group_size` are named, not
    guessed from the mismatch."""
    block = make_block()
    source = ref.random_sequence(S, seed=2)
    target = np.zeros((3 * ref.BATCH, T, ref.D_MODEL), "float32")
    cache = block.compute_cross_attention_cache(source) if with_cache else None
    with pytest.raises(ValueError, match="encoder_group_size=1 rows per row of encoder_sequence"):
        block(target, source, cross_attention_cache=cache)
    with pytest.raises(ValueError, match="encoder_group_size=2 rows per row"):
        block(target, source, cross_attention_cache=cache, encoder_group_size=2)
