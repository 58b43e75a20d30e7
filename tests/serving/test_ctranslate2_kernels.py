"""Quick guards of the CTranslate2 converter (issue 53, point 12): every converted kernel in
CTranslate2's orientation, and `detokenize` keeping every piece, the last one too.

The tests of `test_ctranslate2_converter.py` run the converted models in CTranslate2, which
is thorough but slow (its module fixtures train a tokenizer of 120 pieces and import
`ctranslate2.specs`, which imports PyTorch: seconds). Here a tiny model (`d_model` 8, one
layer a side, 16 pieces) is converted into a stand-in for CTranslate2's `TransformerSpec`, and
each linear weight, applied the way CTranslate2 applies it (`x @ weight.T + bias`, weights
`(out, in)`), must give what the Keras layer it came from gives, against float64 NumPy. With
`d_model` 8 and 2 heads, most kernels are square: a transposed one would keep its shape and
only its values would tell.
"""

import types

import keras
import numpy as np
import pytest

from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.models import Transformer
from keras_attention.serving import ctranslate2_converter
from keras_attention.serving.ctranslate2_converter import (
    ctranslate2_spec,
    detokenize,
    source_tokens,
    vocabulary,
)
from tests.conftest import to_numpy
from tests.data.test_quick_guards import TINY_TEXTS
from tests.tolerances import assert_close

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="the tokenizer needs TensorFlow"
)

VOCABULARY_SIZE = 16
TINY_MODEL = dict(
    num_encoder_layers=1,
    num_decoder_layers=1,
    d_model=8,
    num_heads=2,
    intermediate_dim=16,
    dropout=0.0,
)


def _linear() -> types.SimpleNamespace:
    return types.SimpleNamespace(weight=None, bias=None)


def _layer_norm() -> types.SimpleNamespace:
    return types.SimpleNamespace(gamma=None, beta=None)


def _attention(linears: int) -> types.SimpleNamespace:
    return types.SimpleNamespace(
        linear=[_linear() for _ in range(linears)], layer_norm=_layer_norm()
    )


def _feed_forward() -> types.SimpleNamespace:
    return types.SimpleNamespace(linear_0=_linear(), linear_1=_linear(), layer_norm=_layer_norm())


def _stack(num_layers: int, decoder: bool) -> types.SimpleNamespace:
    def layer():
        if decoder:
            return types.SimpleNamespace(
                self_attention=_attention(2), attention=_attention(3), ffn=_feed_forward()
            )
        return types.SimpleNamespace(self_attention=_attention(2), ffn=_feed_forward())

    embedding = types.SimpleNamespace(weight=None)
    return types.SimpleNamespace(
        # CTranslate2's encoder has one embedding per source factor; its decoder one.
        embeddings=embedding if decoder else [embedding],
        scale_embeddings=None,
        position_encodings=types.SimpleNamespace(encodings=None),
        layer=[layer() for _ in range(num_layers)],
        layer_norm=_layer_norm(),
        projection=_linear() if decoder else None,
    )


class SpecStandIn:
    """The parts of `ctranslate2.specs.TransformerSpec` (CTranslate2 4.x) the converter
    writes, with the same names and nesting; made by `from_config` as the real one is."""

    def __init__(self, num_layers: tuple[int, int], num_heads: int, pre_norm: bool):
        self.num_heads, self.pre_norm = num_heads, pre_norm
        self.encoder = _stack(num_layers[0], decoder=False)
        self.decoder = _stack(num_layers[1], decoder=True)
        self.config = types.SimpleNamespace()
        self.vocabularies = {}

    @classmethod
    def from_config(cls, num_layers, num_heads, pre_norm=False):
        return cls(num_layers, num_heads, pre_norm)

    def register_source_vocabulary(self, pieces):
        self.vocabularies["source"] = pieces

    def register_target_vocabulary(self, pieces):
        self.vocabularies["target"] = pieces

    def validate(self):
        pass


@pytest.fixture(scope="module")
def tiny_tokenizer() -> SubwordTokenizer:
    return SubwordTokenizer.train(TINY_TEXTS, vocabulary_size=VOCABULARY_SIZE)


def converted(model: Transformer, tokenizer: SubwordTokenizer, monkeypatch) -> SpecStandIn:
    """`ctranslate2_spec(model, tokenizer)` written into a `SpecStandIn` (no CTranslate2)."""
    fake = types.SimpleNamespace(specs=types.SimpleNamespace(TransformerSpec=SpecStandIn))
    monkeypatch.setattr(ctranslate2_converter, "_import_ctranslate2", lambda: fake)
    return ctranslate2_spec(model, tokenizer, max_positions=16)


def linear_part(dense: keras.layers.Dense, inputs: np.ndarray) -> np.ndarray:
    """`dense(inputs)` before its activation (the feed-forward's inner layer has a ReLU,
    which CTranslate2 applies after its linear)."""
    activation = dense.activation
    dense.activation = keras.activations.linear
    try:
        return to_numpy(dense(inputs))
    finally:
        dense.activation = activation


def assert_linear(spec_linear, denses: list, inputs: np.ndarray) -> None:
    """CTranslate2's `inputs @ weight.T + bias`, in float64, equals the Keras `denses`'
    outputs side by side (a fused linear: query, key and value in order)."""
    weight = np.asarray(spec_linear.weight, np.float64)
    bias = np.asarray(spec_linear.bias, np.float64)
    expected = np.concatenate([linear_part(dense, inputs) for dense in denses], axis=-1)
    assert weight.shape == (expected.shape[-1], inputs.shape[-1])
    assert_close(inputs.astype(np.float64) @ weight.T + bias, expected)


@pytest.mark.parametrize(
    "overrides",
    [{"norm_first": False}, {"norm_first": True, "tie_output_embeddings": False}],
    ids=["post_ln_tied", "pre_ln_untied"],
)
def test_every_kernel_is_in_ctranslate2s_orientation(tiny_tokenizer, monkeypatch, overrides):
    keras.utils.set_random_seed(5)
    model = Transformer(VOCABULARY_SIZE, **TINY_MODEL, **overrides)
    model.build()
    spec = converted(model, tiny_tokenizer, monkeypatch)
    hidden = np.random.default_rng(0).normal(size=(3, 8)).astype("float32")  # (rows, d_model)
    inner = np.random.default_rng(1).normal(size=(3, 16)).astype("float32")  # (rows, d_ff)

    for stack, blocks in (
        (spec.encoder, model.encoder.blocks),
        (spec.decoder, model.decoder.blocks),
    ):
        for layer, block in zip(stack.layer, blocks, strict=True):
            attention = block.self_attention
            fused = [attention.query_dense, attention.key_dense, attention.value_dense]
            assert_linear(layer.self_attention.linear[0], fused, hidden)
            assert_linear(layer.self_attention.linear[1], [attention.output_dense], hidden)
            feed_forward = block.feed_forward
            assert_linear(layer.ffn.linear_0, [feed_forward.inner_dense], hidden)
            assert_linear(layer.ffn.linear_1, [feed_forward.output_dense], inner)
    for layer, block in zip(spec.decoder.layer, model.decoder.blocks, strict=True):
        cross = block.cross_attention
        assert_linear(layer.attention.linear[0], [cross.query_dense], hidden)
        assert_linear(layer.attention.linear[1], [cross.key_dense, cross.value_dense], hidden)
        assert_linear(layer.attention.linear[2], [cross.output_dense], hidden)

    # The embeddings are looked up by row, the output projection is `hidden @ weight.T`.
    ids = np.array([[4, 9, 15]], "int32")
    for stack_embeddings, embedding in (
        (spec.encoder.embeddings[0], model.source_embedding),
        (spec.decoder.embeddings, model.target_embedding),
    ):
        looked_up = to_numpy(embedding.token_embedding(ids))[0]
        assert_close(np.asarray(stack_embeddings.weight, np.float64)[ids[0]], looked_up)
    projection = np.asarray(spec.decoder.projection.weight, np.float64)
    logits = to_numpy(model.target_embedding.token_embedding(hidden[None], reverse=True))[0]
    assert projection.shape == (VOCABULARY_SIZE, 8)
    assert_close(hidden.astype(np.float64) @ projection.T, logits)


def test_detokenize_keeps_every_piece_to_the_last(tiny_tokenizer):
    sentences = ["abc bad cab", "dab", "cab dab bad abc"]
    assert detokenize(tiny_tokenizer, source_tokens(tiny_tokenizer, sentences)) == sentences
    # Pieces as CTranslate2 returns them: hypotheses of different lengths, no `</s>`.
    pieces = vocabulary(tiny_tokenizer)
    words = [piece for piece in pieces if piece.startswith("\u2581") and len(piece) > 1]
    hypotheses = [words[:1], words[:3], []]
    expected = [" ".join(piece[1:] for piece in hypothesis) for hypothesis in hypotheses]
    assert detokenize(tiny_tokenizer, hypotheses) == expected
