"""One table of every public layer, shared by the serialization, mixed-precision and model tests.

Each `LayerCase` gives a non-default value to EVERY constructor argument of its layer, the
sample inputs the layer takes, and how to call it (on NumPy arrays, backend tensors or
symbolic `keras.Input`s alike).
"""

import dataclasses
import inspect
from collections.abc import Callable

import keras
import numpy as np

import keras_attention as ka

BATCH, SOURCE_LEN, TARGET_LEN, D_MODEL, VOCABULARY_SIZE = 2, 6, 5, 16, 13
# How many trailing positions of the second example are padding (the first has none).
SOURCE_PADDING, TARGET_PADDING = 2, 1


def initializer(kind: str, seed: int) -> keras.initializers.Initializer:
    """A seeded initializer that differs from every layer's default."""
    if kind == "kernel":
        return keras.initializers.RandomNormal(mean=0.0, stddev=0.2, seed=seed)
    return keras.initializers.RandomUniform(minval=-0.1, maxval=0.1, seed=seed)


def block_arguments() -> dict:
    """Non-default values for every argument of the encoder/decoder blocks."""
    return {
        "num_heads": 2,
        "intermediate_dim": 24,
        "key_dim": 6,
        "attention_scale": 0.3,
        "dropout": 0.2,
        "attention_dropout": 0.1,
        "activation_dropout": 0.15,
        "activation": "gelu",
        "norm_first": True,
        "layer_norm_epsilon": 1e-5,
        "kernel_initializer": initializer("kernel", 11),
        "bias_initializer": initializer("bias", 12),
    }


def stack_arguments() -> dict:
    """Non-default values for every argument of the encoder/decoder stacks."""
    return {"num_layers": 2, **block_arguments()}


def padding_mask(length: int, padding: int) -> np.ndarray:
    """`(BATCH, length)` boolean mask: row 0 all real, row 1 ends with `padding` pads."""
    mask = np.ones((BATCH, length), dtype=bool)
    mask[1, length - padding :] = False
    return mask


def token_ids(rng: np.random.Generator, length: int, padding: int) -> np.ndarray:
    """`(BATCH, length)` int32 ids in `[1, VOCABULARY_SIZE)`; 0 where `padding_mask` is False."""
    ids = rng.integers(1, VOCABULARY_SIZE, size=(BATCH, length))
    return np.where(padding_mask(length, padding), ids, 0).astype("int32")


def sequence(rng: np.random.Generator, length: int, depth: int, scale: float) -> np.ndarray:
    """`(BATCH, length, depth)` float32 values of magnitude about `scale`."""
    return (scale * rng.standard_normal((BATCH, length, depth))).astype("float32")


def attention_mask() -> np.ndarray:
    """`(BATCH, TARGET_LEN, SOURCE_LEN)`: padded keys masked; query 0 of example 1 sees no key."""
    mask = np.broadcast_to(
        padding_mask(SOURCE_LEN, SOURCE_PADDING)[:, None, :], (BATCH, TARGET_LEN, SOURCE_LEN)
    )
    mask = mask.copy()
    mask[1, 0, :] = False
    return mask


def attention_inputs(rng: np.random.Generator, scale: float) -> dict:
    return {
        "query": sequence(rng, TARGET_LEN, 8, scale),
        "key": sequence(rng, SOURCE_LEN, 8, scale),
        "value": sequence(rng, SOURCE_LEN, 4, scale),
        "mask": attention_mask(),
    }


def multi_head_inputs(rng: np.random.Generator, scale: float) -> dict:
    return {
        "query": sequence(rng, TARGET_LEN, D_MODEL, scale),
        "value": sequence(rng, SOURCE_LEN, 12, scale),
        "key": sequence(rng, SOURCE_LEN, 8, scale),
        "attention_mask": attention_mask(),
    }


def hidden_inputs(rng: np.random.Generator, scale: float) -> dict:
    return {"inputs": sequence(rng, TARGET_LEN, D_MODEL, scale)}


def token_inputs(rng: np.random.Generator, scale: float) -> dict:
    del scale  # token ids have no magnitude
    return {"token_ids": token_ids(rng, TARGET_LEN, TARGET_PADDING)}


def encoder_inputs(rng: np.random.Generator, scale: float) -> dict:
    return {
        "inputs": sequence(rng, SOURCE_LEN, D_MODEL, scale),
        "padding_mask": padding_mask(SOURCE_LEN, SOURCE_PADDING),
    }


def decoder_inputs(rng: np.random.Generator, scale: float) -> dict:
    return {
        "decoder_sequence": sequence(rng, TARGET_LEN, D_MODEL, scale),
        "encoder_sequence": sequence(rng, SOURCE_LEN, D_MODEL, scale),
        "decoder_padding_mask": padding_mask(TARGET_LEN, TARGET_PADDING),
        "encoder_padding_mask": padding_mask(SOURCE_LEN, SOURCE_PADDING),
    }


def call_attention(layer: keras.layers.Layer, x: dict) -> list:
    return [layer(x["query"], x["key"], x["value"], mask=x["mask"])]


def call_multi_head(layer: keras.layers.Layer, x: dict) -> list:
    return [layer(x["query"], x["value"], key=x["key"], attention_mask=x["attention_mask"])]


def call_positional_encoding(layer: keras.layers.Layer, x: dict) -> list:
    return [layer(x["inputs"], start_index=3)]


def call_embedding(layer: keras.layers.Layer, x: dict) -> list:
    hidden = layer(x["token_ids"])
    return [hidden, layer(hidden, reverse=True)]


def call_single(layer: keras.layers.Layer, x: dict) -> list:
    return [layer(x["inputs"])]


def call_encoder(layer: keras.layers.Layer, x: dict) -> list:
    return [layer(x["inputs"], padding_mask=x["padding_mask"])]


def call_decoder(layer: keras.layers.Layer, x: dict) -> list:
    return [
        layer(
            x["decoder_sequence"],
            x["encoder_sequence"],
            decoder_padding_mask=x["decoder_padding_mask"],
            encoder_padding_mask=x["encoder_padding_mask"],
        )
    ]


@dataclasses.dataclass(frozen=True)
class LayerCase:
    """A public layer, non-default values for all its arguments, and how to call it."""

    layer_class: type
    arguments: Callable[[], dict]
    inputs: Callable[[np.random.Generator, float], dict]
    call: Callable[[keras.layers.Layer, dict], list]

    @property
    def name(self) -> str:
        return self.layer_class.__name__

    def make_layer(self, **overrides) -> keras.layers.Layer:
        return self.layer_class(**{**self.arguments(), **overrides})

    def sample_inputs(self, scale: float = 1.0, seed: int = 0) -> dict:
        return self.inputs(np.random.default_rng(seed), scale)


LAYER_CASES = [
    LayerCase(
        ka.ScaledDotProductAttention,
        lambda: {"dropout": 0.1, "scale": 0.3, "seed": 7},
        attention_inputs,
        call_attention,
    ),
    LayerCase(
        ka.MultiHeadAttention,
        lambda: {
            "num_heads": 2,
            "key_dim": 4,
            "value_dim": 6,
            "dropout": 0.1,
            "use_bias": False,
            "output_shape": 10,
            "attention_axes": 1,
            "kernel_initializer": initializer("kernel", 1),
            "bias_initializer": initializer("bias", 2),
            "kernel_regularizer": keras.regularizers.L2(1e-4),
            "bias_regularizer": keras.regularizers.L1(1e-5),
            "kernel_constraint": keras.constraints.MaxNorm(3.0),
            "bias_constraint": keras.constraints.NonNeg(),
            "seed": 3,
            "scale": 0.25,
        },
        multi_head_inputs,
        call_multi_head,
    ),
    LayerCase(
        ka.SinusoidalPositionalEncoding,
        lambda: {"max_wavelength": 500.0},
        hidden_inputs,
        call_positional_encoding,
    ),
    LayerCase(
        ka.LearnedPositionalEncoding,
        lambda: {"max_positions": 12, "initializer": initializer("kernel", 9)},
        hidden_inputs,
        call_positional_encoding,
    ),
    LayerCase(
        ka.PositionalEmbedding,
        lambda: {
            "vocabulary_size": VOCABULARY_SIZE,
            "d_model": D_MODEL,
            "dropout": 0.1,
            "mask_zero": False,
            "max_wavelength": 500.0,
            "tie_weights": False,
            "scale_embeddings": False,
            "embeddings_initializer": initializer("kernel", 4),
            "max_positions": 12,
        },
        token_inputs,
        call_embedding,
    ),
    LayerCase(
        ka.PositionwiseFeedForward,
        lambda: {
            "intermediate_dim": 24,
            "dropout": 0.1,
            "activation": "gelu",
            "output_dim": 12,
            "use_bias": False,
            "kernel_initializer": initializer("kernel", 5),
            "bias_initializer": initializer("bias", 6),
        },
        hidden_inputs,
        call_single,
    ),
    LayerCase(ka.TransformerEncoderBlock, block_arguments, encoder_inputs, call_encoder),
    LayerCase(ka.TransformerDecoderBlock, block_arguments, decoder_inputs, call_decoder),
    LayerCase(ka.TransformerEncoder, stack_arguments, encoder_inputs, call_encoder),
    LayerCase(ka.TransformerDecoder, stack_arguments, decoder_inputs, call_decoder),
]

# The table's ids, for `pytest.mark.parametrize(..., ids=CASE_IDS)`.
CASE_IDS = [case.name for case in LAYER_CASES]


def case_for(layer_class: type) -> LayerCase:
    """The table's entry for `layer_class`."""
    return next(case for case in LAYER_CASES if case.layer_class is layer_class)


def call_case(
    case: LayerCase, layer: keras.layers.Layer | None = None, scale: float = 1.0
) -> tuple[keras.layers.Layer, dict, list]:
    """Builds the case's sample inputs and calls `layer` (a new one by default) on them.

    Returns:
        The layer, the NumPy inputs, and the list of outputs as NumPy arrays.
    """
    layer = case.make_layer() if layer is None else layer
    inputs = case.sample_inputs(scale)
    return layer, inputs, output_list(case.call(layer, inputs))


def output_list(outputs) -> list[np.ndarray]:
    """Outputs (one tensor, or a list or tuple of them) as a list of NumPy arrays."""
    outputs = outputs if isinstance(outputs, list | tuple) else [outputs]
    return [keras.ops.convert_to_numpy(y) for y in outputs]


def constructor_arguments(layer_class: type) -> dict[str, inspect.Parameter]:
    """Every named `__init__` argument of `layer_class`, following `**kwargs` up to the
    base classes of the library (stopping at `keras.layers.Layer`)."""
    arguments = {}
    for klass in layer_class.__mro__:
        if klass is keras.layers.Layer or not issubclass(klass, keras.layers.Layer):
            break
        if "__init__" not in vars(klass):
            continue
        parameters = inspect.signature(klass.__init__).parameters
        for name, parameter in parameters.items():
            if name != "self" and parameter.kind not in (
                parameter.VAR_POSITIONAL,
                parameter.VAR_KEYWORD,
            ):
                arguments.setdefault(name, parameter)
        if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
            break
    return arguments


def functional_model(case: LayerCase, layer: keras.layers.Layer | None = None) -> keras.Model:
    """A Functional model whose inputs are the case's sample inputs and whose outputs are
    the layer's."""
    layer = case.make_layer() if layer is None else layer
    symbolic = {
        name: keras.Input(shape=value.shape[1:], dtype=str(value.dtype), name=name)
        for name, value in case.sample_inputs().items()
    }
    return keras.Model(symbolic, case.call(layer, symbolic), name=f"{case.name}_model")


def translation_model(
    d_model: int = D_MODEL, num_heads: int = 2, intermediate_dim: int = 24, num_layers: int = 1
) -> keras.Model:
    """A Functional encoder-decoder: one `PositionalEmbedding` embeds source and target ids
    and, with `reverse=True`, gives the logits (tied weights)."""
    source = keras.Input(shape=(None,), dtype="int32", name="source_ids")
    target = keras.Input(shape=(None,), dtype="int32", name="target_ids")
    embedding = ka.PositionalEmbedding(VOCABULARY_SIZE, d_model, name="shared_embedding")
    sizes = {"num_layers": num_layers, "num_heads": num_heads, "intermediate_dim": intermediate_dim}
    encoded = ka.TransformerEncoder(**sizes, dropout=0.0, name="encoder")(embedding(source))
    decoded = ka.TransformerDecoder(**sizes, dropout=0.0, name="decoder")(
        embedding(target), encoded
    )
    logits = embedding(decoded, reverse=True)
    return keras.Model({"source_ids": source, "target_ids": target}, logits, name="translation")


def translation_inputs(seed: int = 0) -> dict:
    """Source and target ids for `translation_model` and `Seq2Seq`, with padding."""
    rng = np.random.default_rng(seed)
    return {
        "source_ids": token_ids(rng, SOURCE_LEN, SOURCE_PADDING),
        "target_ids": token_ids(rng, TARGET_LEN, TARGET_PADDING),
    }


@keras.saving.register_keras_serializable(package="keras_attention_tests")
class Seq2Seq(keras.Model):
    """A subclassed encoder-decoder built from the library's layers (for the tests)."""

    def __init__(
        self, d_model: int = D_MODEL, num_heads: int = 2, intermediate_dim: int = 24, **kwargs
    ):
        super().__init__(**kwargs)
        self.d_model = d_model
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        sizes = {"num_heads": num_heads, "intermediate_dim": intermediate_dim, "dropout": 0.0}
        self.embedding = ka.PositionalEmbedding(VOCABULARY_SIZE, d_model)
        self.encoder = ka.TransformerEncoderBlock(**sizes)
        self.decoder = ka.TransformerDecoder(num_layers=1, **sizes)

    def call(self, inputs, training=None):
        source, target = inputs["source_ids"], inputs["target_ids"]
        encoded = self.encoder(
            self.embedding(source), padding_mask=ka.masks.padding_mask(source), training=training
        )
        decoded = self.decoder(
            self.embedding(target),
            encoded,
            decoder_padding_mask=ka.masks.padding_mask(target),
            encoder_padding_mask=ka.masks.padding_mask(source),
            training=training,
        )
        return self.embedding(decoded, reverse=True)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "d_model": self.d_model,
                "num_heads": self.num_heads,
                "intermediate_dim": self.intermediate_dim,
            }
        )
        return config
