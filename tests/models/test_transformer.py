"""The Transformer model (Section 3, Figure 1) against a float64 NumPy reference."""

import inspect

import keras
import numpy as np
import pytest

from keras_attention.models import PRESETS, Transformer, preset_config
from tests.conftest import to_numpy
from tests.layers import numpy_reference as ref
from tests.layers.test_positional_embedding import reference_embedding
from tests.tolerances import assert_close

VOCABULARY_SIZE, TARGET_VOCABULARY_SIZE = 11, 13
# Tiny sizes: every test builds its own model on 2 shared CPU cores.
SIZE = dict(
    num_encoder_layers=2,
    num_decoder_layers=2,
    d_model=8,
    num_heads=2,
    intermediate_dim=16,
    dropout=0.0,
)
# Row 1 of the source and rows 1 and 2 of the target end with padding (id 0).
SOURCE = np.array([[5, 9, 3, 7, 2], [4, 8, 6, 0, 0], [10, 1, 3, 3, 6]], dtype="int32")
TARGET = np.array([[1, 6, 3, 10], [1, 2, 0, 0], [1, 7, 7, 0]], dtype="int32")
BATCH, SOURCE_LEN = SOURCE.shape
TARGET_LEN = TARGET.shape[1]

# The paper's Table 3 ("base", "big") and the project's CPU sizes.
PRESET_TABLE = {
    "base": (6, 6, 512, 8, 2048, 0.1),
    "big": (6, 6, 1024, 16, 4096, 0.3),
    "small": (3, 3, 256, 8, 1024, 0.1),
    "tiny": (4, 4, 128, 4, 256, 0.3),
}
SIZE_NAMES = (
    "num_encoder_layers",
    "num_decoder_layers",
    "d_model",
    "num_heads",
    "intermediate_dim",
    "dropout",
)

# Embedding set-ups: which matrices exist, and how big.
EMBEDDING_CONFIGS = {
    "tied": {},
    "separate_vocabularies": {
        "share_embeddings": False,
        "target_vocabulary_size": TARGET_VOCABULARY_SIZE,
    },
    "untied_output": {"tie_output_embeddings": False},
    "separate_and_untied": {
        "share_embeddings": False,
        "target_vocabulary_size": TARGET_VOCABULARY_SIZE,
        "tie_output_embeddings": False,
    },
    "pre_ln": {"norm_first": True},
}

# The paper's variations (Table 3 and Sections 3.2.1, 3.4, 3.5) that change what is computed.
PAPER_VARIATIONS = {
    "smaller_key_dim": {"key_dim": 3},  # row (B): d_k < d_model / h
    "unscaled_attention": {"attention_scale": 1.0},  # no 1 / sqrt(d_k)
    "unscaled_embeddings": {"scale_embeddings": False},  # no sqrt(d_model)
    "learned_positions": {"max_positions": 16},  # row (E)
}


def preset_sizes(preset: str, **overrides) -> dict:
    """The sizes of `preset` written from the table above, updated with `overrides`."""
    return {**dict(zip(SIZE_NAMES, PRESET_TABLE[preset], strict=True)), **overrides}


def make_model(seed: int = 3, **overrides) -> Transformer:
    """A tiny Transformer, built by one call and given random weights (biases, betas and
    gammas included, so that a reference that forgets one of them does not match)."""
    model = Transformer(vocabulary_size=VOCABULARY_SIZE, **{**SIZE, **overrides})
    model((SOURCE, TARGET))
    ref.randomize_weights(model, seed)
    return model


def output_matrix(model: Transformer) -> np.ndarray:
    """The `(d_model, vocab)` pre-softmax projection: `E^T` when tied, else the separate one."""
    token_embedding = model.target_embedding.token_embedding
    if model.tie_output_embeddings:
        return ref.as_float64(token_embedding.embeddings).T
    return ref.as_float64(token_embedding.reverse_embeddings)


def reference_hidden(model: Transformer, source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The decoder output `(batch, T, d_model)` in float64 from the model's weights: scaled
    embeddings plus sinusoids, the encoder over the real source tokens, the causal decoder."""
    source_real, target_real = source != 0, target != 0
    (batch, source_len), target_len = source.shape, target.shape[1]
    encoded, _ = ref.encoder_stack(
        reference_embedding(model.source_embedding, source),
        model.encoder,
        ref.attention_mask(batch, source_len, source_len, source_real, source_real),
    )
    hidden, _ = ref.decoder_stack(
        reference_embedding(model.target_embedding, target),
        model.decoder,
        ref.attention_mask(batch, target_len, target_len, target_real, target_real, causal=True),
        encoded,
        ref.attention_mask(batch, target_len, source_len, target_real, source_real),
    )
    return hidden


def reference_logits(model: Transformer, source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """`decoder_output @ W_out` in float64 (Section 3.4: `W_out = E^T` when tied)."""
    return reference_hidden(model, source, target) @ output_matrix(model)


def expected_parameter_count(
    vocabulary_size: int,
    d_model: int,
    intermediate_dim: int,
    num_encoder_layers: int,
    num_decoder_layers: int,
    target_vocabulary_size: int | None = None,
    share_embeddings: bool = True,
    tie_output_embeddings: bool = True,
    norm_first: bool = False,
    **unused,
) -> int:
    """The parameter count by hand: Q, K, V, O projections with biases, two-layer FFN,
    (gamma, beta) per layer norm, and the embedding matrices that exist."""
    del unused  # sizes that do not change the count (heads, dropout)
    attention = 4 * (d_model * d_model + d_model)
    feed_forward = 2 * d_model * intermediate_dim + intermediate_dim + d_model
    norm = 2 * d_model
    final_norm = norm if norm_first else 0
    encoder = num_encoder_layers * (attention + feed_forward + 2 * norm) + final_norm
    decoder = num_decoder_layers * (2 * attention + feed_forward + 3 * norm) + final_norm
    output_vocabulary = target_vocabulary_size or vocabulary_size
    embeddings = output_vocabulary * d_model
    if not share_embeddings:
        embeddings += vocabulary_size * d_model
    if not tie_output_embeddings:
        embeddings += d_model * output_vocabulary
    return encoder + decoder + embeddings


def embedding_shapes(model: Transformer) -> list[tuple]:
    """The shapes of the model's embedding matrices (input and output), sorted."""
    return sorted(tuple(w.shape) for w in model.weights if w.path.endswith("embeddings"))


def assert_differ(first: object, second: object) -> None:
    assert not np.allclose(to_numpy(first), to_numpy(second), atol=1e-4)


def assert_stack_sizes(stack: keras.layers.Layer, num_layers: int, sizes: dict) -> None:
    """The (unbuilt) stack's arguments are the expected sizes."""
    assert stack.num_layers == num_layers
    assert stack.num_heads == sizes["num_heads"]
    assert stack.intermediate_dim == sizes["intermediate_dim"]
    assert stack.dropout == sizes["dropout"]


def assert_built_block_sizes(block: keras.layers.Layer, attention_names: tuple, sizes: dict):
    """The built block's weights have the shapes the sizes give, and its dropouts the rate."""
    d_model, heads = sizes["d_model"], sizes["num_heads"]
    for name in attention_names:
        attention = getattr(block, name)
        assert attention.num_heads == heads
        assert tuple(attention.query_dense.kernel.shape) == (d_model, d_model)
        assert tuple(attention.output_dense.kernel.shape) == (d_model, d_model)
        assert getattr(block, f"{name}_dropout").rate == sizes["dropout"]
    assert tuple(block.feed_forward.inner_dense.kernel.shape) == (
        d_model,
        sizes["intermediate_dim"],
    )
    assert tuple(block.feed_forward.output_dense.kernel.shape) == (
        sizes["intermediate_dim"],
        d_model,
    )
    assert block.feed_forward_dropout.rate == sizes["dropout"]


def change_token(ids: np.ndarray, position: int) -> np.ndarray:
    """`ids` with another non-zero id at `position` of every row."""
    changed = ids.copy()
    changed[:, position] = ids[:, position] % (VOCABULARY_SIZE - 1) + 1
    return changed


# ---------------------------------------------------------------------------------------------
# Presets
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("preset", sorted(PRESET_TABLE))
def test_preset_config_gives_the_table(preset: str):
    assert set(PRESETS) == set(PRESET_TABLE)
    assert preset_config(preset) == preset_sizes(preset)


@pytest.mark.parametrize(
    "preset, overrides",
    [
        ("base", {}),
        ("big", {}),
        ("small", {}),
        ("tiny", {}),
        ("big", {"dropout": 0.25, "num_heads": 8, "num_decoder_layers": 2}),
        ("base", {"d_model": 256, "intermediate_dim": 1024}),
    ],
)
def test_unbuilt_preset_model_has_the_table_sizes_and_overrides_win(preset: str, overrides):
    sizes = preset_sizes(preset, **overrides)
    assert preset_config(preset, **overrides) == sizes
    model = Transformer.from_preset(preset, vocabulary_size=VOCABULARY_SIZE, **overrides)
    assert not model.built
    for name, value in sizes.items():
        assert getattr(model, name) == value, name
    assert_stack_sizes(model.encoder, sizes["num_encoder_layers"], sizes)
    assert_stack_sizes(model.decoder, sizes["num_decoder_layers"], sizes)
    assert model.source_embedding.d_model == sizes["d_model"]
    assert model.source_embedding.dropout == sizes["dropout"]


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {
            "num_encoder_layers": 1,
            "num_decoder_layers": 2,
            "d_model": 16,
            "num_heads": 2,
            "intermediate_dim": 24,
            "dropout": 0.0,
        },
    ],
    ids=["tiny", "tiny_with_overrides"],
)
def test_built_tiny_preset_has_the_table_sizes(overrides: dict):
    sizes = preset_sizes("tiny", **overrides)
    model = Transformer.from_preset("tiny", vocabulary_size=VOCABULARY_SIZE, **overrides)
    logits = model((SOURCE, TARGET))
    assert tuple(logits.shape) == (BATCH, TARGET_LEN, VOCABULARY_SIZE)
    assert len(model.encoder.blocks) == sizes["num_encoder_layers"]
    assert len(model.decoder.blocks) == sizes["num_decoder_layers"]
    for block in model.encoder.blocks:
        assert_built_block_sizes(block, ("self_attention",), sizes)
    for block in model.decoder.blocks:
        assert_built_block_sizes(block, ("self_attention", "cross_attention"), sizes)
    assert embedding_shapes(model) == [(VOCABULARY_SIZE, sizes["d_model"])]
    assert model.target_embedding.embedding_dropout.rate == sizes["dropout"]
    assert model.count_params() == expected_parameter_count(VOCABULARY_SIZE, **sizes)


def test_unknown_preset_is_named():
    with pytest.raises(ValueError, match="preset"):
        Transformer.from_preset("huge", vocabulary_size=VOCABULARY_SIZE)
    with pytest.raises(ValueError, match="preset='huge'"):
        preset_config("huge")


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (
            {"target_vocabulary_size": TARGET_VOCABULARY_SIZE},
            [f"vocabulary_size={VOCABULARY_SIZE}", "target_vocabulary_size=13"],
        ),
        ({"num_heads": 3}, ["num_heads=3", "d_model=8"]),
        ({"vocabulary_size": 0}, ["vocabulary_size=0"]),
        ({"target_vocabulary_size": -2, "share_embeddings": False}, ["target_vocabulary_size=-2"]),
        ({"dropout": 1.0}, ["dropout=1.0"]),
    ],
)
def test_invalid_arguments_are_named(kwargs: dict, words: list):
    arguments = {"vocabulary_size": VOCABULARY_SIZE, **SIZE, **kwargs}
    with pytest.raises(ValueError) as info:
        Transformer(**arguments)
    for word in words:
        assert word in str(info.value)


# ---------------------------------------------------------------------------------------------
# Embeddings and the output projection (Section 3.4)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("config", list(EMBEDDING_CONFIGS))
def test_logits_match_float64_reference(config: str):
    model = make_model(**EMBEDDING_CONFIGS[config])
    logits = model((SOURCE, TARGET))
    assert tuple(logits.shape) == (BATCH, TARGET_LEN, model.output_vocabulary_size)
    assert_close(logits, reference_logits(model, SOURCE, TARGET))


@pytest.mark.parametrize("variation", list(PAPER_VARIATIONS))
def test_paper_variations_match_float64_reference(variation: str):
    model = make_model(**PAPER_VARIATIONS[variation])
    logits = model((SOURCE, TARGET))
    assert_close(logits, reference_logits(model, SOURCE, TARGET))
    # The variation is really applied: the same weights in the paper's model differ.
    paper = make_model()
    if variation not in ("smaller_key_dim", "learned_positions"):  # (other weight shapes)
        paper.set_weights(model.get_weights())
        assert_differ(paper((SOURCE, TARGET)), logits)


@pytest.mark.parametrize("config", list(EMBEDDING_CONFIGS))
def test_logits_are_the_decoders_output_times_the_output_matrix(config: str):
    """The projection alone, from the model's own decoder hidden states."""
    model = make_model(**EMBEDDING_CONFIGS[config])
    encoded, source_mask = model.encode(SOURCE)
    hidden = model.decoder(
        model.target_embedding(TARGET),
        encoded,
        decoder_padding_mask=TARGET != 0,
        encoder_padding_mask=source_mask,
    )
    expected = ref.as_float64(hidden) @ output_matrix(model)
    assert_close(model.decode(TARGET, encoded, source_mask), expected)


@pytest.mark.parametrize(
    "config, shapes",
    [
        ("tied", [(VOCABULARY_SIZE, 8)]),
        ("separate_vocabularies", [(VOCABULARY_SIZE, 8), (TARGET_VOCABULARY_SIZE, 8)]),
        ("untied_output", [(VOCABULARY_SIZE, 8), (8, VOCABULARY_SIZE)]),
        (
            "separate_and_untied",
            [(VOCABULARY_SIZE, 8), (TARGET_VOCABULARY_SIZE, 8), (8, TARGET_VOCABULARY_SIZE)],
        ),
    ],
)
def test_embedding_matrices_and_parameter_count(config: str, shapes: list):
    overrides = EMBEDDING_CONFIGS[config]
    model = make_model(**overrides)
    assert embedding_shapes(model) == sorted(shapes)
    shared = overrides.get("share_embeddings", True)
    assert (model.source_embedding is model.target_embedding) == shared
    expected = expected_parameter_count(VOCABULARY_SIZE, **{**SIZE, **overrides})
    assert model.count_params() == expected


def test_tied_embedding_is_one_matrix_for_source_target_and_output():
    """A change to the one matrix changes the source embedding, the target embedding and the
    output projection alike (each checked against the reference with the new matrix)."""
    model = make_model()
    (embedding,) = [w for w in model.weights if w.path.endswith("embeddings")]
    embedding.assign(embedding.numpy() * 1.5)
    for layer in (model.source_embedding, model.target_embedding):
        assert_close(layer.embeddings, embedding)
    assert_close(output_matrix(model).T, embedding)
    assert_close(model((SOURCE, TARGET)), reference_logits(model, SOURCE, TARGET))


def test_norm_first_model_has_final_norms():
    model = make_model(norm_first=True)
    assert model.encoder.final_norm is not None and model.decoder.final_norm is not None
    assert model.count_params() == expected_parameter_count(
        VOCABULARY_SIZE, **SIZE, norm_first=True
    )


# ---------------------------------------------------------------------------------------------
# encode / decode / call, dtypes, masks
# ---------------------------------------------------------------------------------------------


def test_encode_decode_call_and_dict_inputs_agree():
    model = make_model()
    expected = reference_logits(model, SOURCE, TARGET)
    encoded, source_mask = model.encode(SOURCE)
    np.testing.assert_array_equal(to_numpy(source_mask), SOURCE != 0)
    assert tuple(encoded.shape) == (BATCH, SOURCE_LEN, SIZE["d_model"])
    assert_close(model.decode(TARGET, encoded, source_mask), expected)
    assert_close(model((SOURCE, TARGET)), expected)
    assert_close(model({"source": SOURCE, "target_in": TARGET}), expected)
    assert_close(model.predict((SOURCE, TARGET), verbose=0), expected)


def test_logits_are_float32_under_mixed_float16():
    keras.config.set_dtype_policy("mixed_float16")  # the conftest fixture restores float32
    model = make_model()
    assert model.encoder.compute_dtype == "float16"
    encoded, source_mask = model.encode(SOURCE)
    for logits in (model((SOURCE, TARGET)), model.decode(TARGET, encoded, source_mask)):
        assert keras.backend.standardize_dtype(logits.dtype) == "float32"
        # float16 activations: the same function as the float64 reference, to float16's rounding.
        assert_close(logits, reference_logits(model, SOURCE, TARGET), dtype="float16")


def test_padded_source_positions_do_not_change_logits():
    model = make_model()
    logits = to_numpy(model((SOURCE, TARGET)))
    # More padding columns.
    assert_close(model((np.pad(SOURCE, ((0, 0), (0, 3))), TARGET)), logits)
    # The padded row alone, without its padding.
    real = int((SOURCE[1] != 0).sum())
    assert_close(model((SOURCE[1:2, :real], TARGET[1:2])), logits[1:2])
    # Anything at the padded positions of the encoder output.
    encoded, source_mask = model.encode(SOURCE)
    noise = np.random.default_rng(5).normal(size=encoded.shape) * 10.0
    noisy = np.where((SOURCE == 0)[:, :, None], noise, to_numpy(encoded)).astype("float32")
    assert_close(model.decode(TARGET, noisy, source_mask), logits)
    # ... while a real source token does change them.
    assert_differ(model((change_token(SOURCE, 0), TARGET)), logits)


@pytest.mark.parametrize("position", range(1, TARGET_LEN))
def test_future_target_tokens_do_not_change_earlier_logits(position: int):
    model = make_model()
    logits = to_numpy(model((SOURCE, TARGET)))
    changed = to_numpy(model((SOURCE, change_token(TARGET, position))))
    assert_close(changed[:, :position], logits[:, :position])
    assert_differ(changed[:, position], logits[:, position])


def test_dropout_only_in_training():
    model = make_model(dropout=0.3)
    expected = reference_logits(model, SOURCE, TARGET)
    assert_close(model((SOURCE, TARGET), training=False), expected)
    assert_differ(model((SOURCE, TARGET), training=True), expected)


@pytest.mark.parametrize("append", [False, True], ids=["fixed_cache", "growing_cache"])
@pytest.mark.parametrize("config", ["tied", "pre_ln", "smaller_key_dim", "learned_positions"])
@pytest.mark.parametrize("chunk", [1, 2])
def test_cached_decoding_equals_full_decode(chunk: int, config: str, append: bool):
    model = make_model(**{**EMBEDDING_CONFIGS, **PAPER_VARIATIONS}[config])
    encoded, source_mask = model.encode(SOURCE)
    full = to_numpy(model.decode(TARGET, encoded, source_mask))
    cache = model.decoder.initial_cache(BATCH, 0 if append else TARGET_LEN)
    cross_cache = model.decoder.compute_cross_attention_cache(encoded)
    pieces = []
    for start in range(0, TARGET_LEN, chunk):
        logits, cache = model.decode(
            TARGET[:, start : start + chunk],
            encoded,
            source_mask,
            start_index=start,
            self_attention_cache=cache,
            cross_attention_cache=cross_cache,
            append_to_cache=append,
        )
        assert keras.backend.standardize_dtype(logits.dtype) == "float32"
        pieces.append(to_numpy(logits))
    assert len(cache) == SIZE["num_decoder_layers"]
    assert tuple(cache[0].shape)[:2] == (2, BATCH) and cache[0].shape[3] == TARGET_LEN
    assert_close(np.concatenate(pieces, axis=1), full)


# ---------------------------------------------------------------------------------------------
# Serialization
# ---------------------------------------------------------------------------------------------

NON_DEFAULT_ARGUMENTS = {
    "vocabulary_size": VOCABULARY_SIZE,
    "target_vocabulary_size": TARGET_VOCABULARY_SIZE,
    "num_encoder_layers": 1,
    "num_decoder_layers": 2,
    "d_model": 8,
    "num_heads": 4,
    "intermediate_dim": 12,
    "dropout": 0.2,
    "attention_dropout": 0.1,
    "activation_dropout": 0.05,
    "norm_first": True,
    "layer_norm_epsilon": 1e-5,
    "share_embeddings": False,
    "tie_output_embeddings": False,
    "max_wavelength": 500.0,
    "key_dim": 3,
    "attention_scale": 0.5,
    "scale_embeddings": False,
    "max_positions": 20,
}


def test_config_round_trip_holds_every_argument():
    parameters = set(inspect.signature(Transformer.__init__).parameters) - {"self", "kwargs"}
    assert set(NON_DEFAULT_ARGUMENTS) == parameters
    model = Transformer(**NON_DEFAULT_ARGUMENTS)
    config = model.get_config()
    for name, value in NON_DEFAULT_ARGUMENTS.items():
        assert config[name] == value, name
    restored = Transformer.from_config(config)
    assert restored.get_config() == config
    # The arguments reach the sub-layers.
    for stack in (restored.encoder, restored.decoder):
        assert stack.attention_dropout == 0.1 and stack.activation_dropout == 0.05
        assert stack.norm_first and stack.layer_norm_epsilon == 1e-5
    assert restored.source_embedding.max_wavelength == 500.0
    assert not restored.source_embedding.scale_embeddings
    assert restored.source_embedding.max_positions == 20
    logits = restored((SOURCE, TARGET))
    assert tuple(logits.shape) == (BATCH, TARGET_LEN, TARGET_VOCABULARY_SIZE)
    for attention in (restored.encoder.blocks[0].self_attention,
                      restored.decoder.blocks[1].cross_attention):  # fmt: skip
        assert (attention.head_key_dim, attention.scale) == (3, 0.5)


@pytest.mark.parametrize("config", ["tied", "separate_and_untied"])
def test_keras_file_round_trip_gives_identical_logits(config: str, tmp_path):
    model = make_model(**EMBEDDING_CONFIGS[config], dropout=0.1)
    path = tmp_path / "transformer.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, Transformer)
    assert loaded.get_config() == model.get_config()
    assert embedding_shapes(loaded) == embedding_shapes(model)
    np.testing.assert_array_equal(
        to_numpy(loaded((SOURCE, TARGET))), to_numpy(model((SOURCE, TARGET)))
    )


def test_the_transformer_is_a_plain_keras_model():
    # No mixin among its bases, and no private method of Keras's overridden: what a strategy
    # needs is applied to a model instance by `keras_attention.distribute` (issue 36).
    keras_classes = set(keras.Model.__mro__)
    assert [cls for cls in Transformer.__mro__ if cls not in keras_classes] == [Transformer]
    keras_names = {name for cls in keras.Model.__mro__ for name in vars(cls)}
    private = [
        name
        for name in vars(Transformer)
        if name.startswith("_") and not name.startswith("__") and name in keras_names
    ]
    assert private == []
