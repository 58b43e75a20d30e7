"""`model.quantize("int8")` on a Transformer: the attention projections run through their own
quantized kernels (with scales), so the logits stay close to float32's and it translates."""

import gc

import keras
import numpy as np
import pytest

from keras_attention.decoding import beam_search, greedy_search
from keras_attention.models import Transformer
from tests.conftest import to_numpy

VOCABULARY = 500


# One layer each side: the decoding tests run the search eagerly, layer by layer.
ONE_LAYER = {"num_encoder_layers": 1, "num_decoder_layers": 1}


def float_and_int8(seed: int = 0) -> tuple[Transformer, Transformer]:
    """A `tiny` Transformer of one layer each side with random weights, and a copy of it
    quantized to int8."""
    keras.utils.set_random_seed(seed)
    model = Transformer.from_preset("tiny", vocabulary_size=VOCABULARY, **ONE_LAYER)
    model.build()
    quantized = Transformer.from_preset("tiny", vocabulary_size=VOCABULARY, **ONE_LAYER)
    quantized.build()
    quantized.set_weights(model.get_weights())
    quantized.quantize("int8")
    return model, quantized


@pytest.fixture(scope="module")
def models():
    return float_and_int8()


def random_ids(shape: tuple[int, int], seed: int) -> np.ndarray:
    ids = np.random.default_rng(seed).integers(4, VOCABULARY, shape).astype("int32")
    ids[:, -1] = 3  # EOS
    return ids


def test_int8_logits_stay_close_to_float32(models):
    model, quantized = models
    source, target = random_ids((8, 20), 1), random_ids((8, 16), 2)
    expected = to_numpy(model((source, target), training=False))
    got = to_numpy(quantized((source, target), training=False))
    assert got.shape == expected.shape
    relative = np.abs(got - expected).max() / np.abs(expected).max()
    agreement = (got.argmax(-1) == expected.argmax(-1)).mean()
    # Measured: 0.6% and 100% (the full `tiny` preset: 2% and 99%; before the fix: 130% and
    # 0%, the int8 kernels read unscaled).
    assert relative < 0.1, relative
    assert agreement > 0.9, agreement


def test_the_int8_model_is_quantized_where_it_should_be(models):
    _, quantized = models
    modes = {layer.quantization_mode for layer in quantized._flatten_layers()
             if isinstance(layer, keras.layers.Dense)}  # fmt: skip
    assert modes == {"int8"}


@pytest.mark.parametrize("search", ["greedy", "beam"])
def test_the_int8_model_translates_like_float32(models, search: str):
    model, quantized = models
    source = random_ids((6, 12), 3)

    def decode(m):
        if search == "greedy":
            return to_numpy(greedy_search(m, source, extra_length=8)[0])
        return to_numpy(beam_search(m, source, beam_size=3, alpha=0.6, extra_length=8)[0])

    expected, got = decode(model), decode(quantized)
    assert got.shape == expected.shape
    assert ((got >= 0) & (got < VOCABULARY)).all()
    assert (got == expected).mean() > 0.8


def test_quantize_collects_garbage_once(monkeypatch: pytest.MonkeyPatch):
    """Keras collects after each kernel it replaces (0.5 s each with TensorFlow loaded);
    the Transformer's `quantize` makes that one collection."""
    made = []
    monkeypatch.setattr(gc, "collect", lambda *args: made.append(args) or 0)
    model = Transformer.from_preset("tiny", vocabulary_size=VOCABULARY, num_encoder_layers=1)
    model.build()
    model.quantize("int8")
    assert len(made) == 1
    source, target = random_ids((2, 5), 3), random_ids((2, 4), 4)
    assert to_numpy(model((source, target), training=False)).shape == (2, 4, VOCABULARY)


# Limits (max relative logit error, min argmax agreement) for random weights, whose logits lie
# close together: int4 (4 bits) agreed on 53% of positions here, float8's relative error on
# the full `tiny` preset was 8%, int4's 19% (int8: 2%).
MODE_LIMITS = {"int8": (0.1, 0.9), "float8": (0.2, 0.8), "int4": (0.4, 0.4)}


@pytest.mark.parametrize("mode", sorted(MODE_LIMITS))
def test_every_mode_quantizes_every_projection_and_stays_close(mode: str):
    keras.utils.set_random_seed(0)
    model = Transformer.from_preset("tiny", vocabulary_size=VOCABULARY, num_encoder_layers=1)
    model.build()
    source, target = random_ids((4, 12), 1), random_ids((4, 9), 2)
    expected = to_numpy(model((source, target), training=False))
    model.quantize(mode)
    attention = model.decoder.blocks[0].cross_attention
    projections = (attention.query_dense, attention.key_dense, attention.value_dense)
    assert {dense.quantization_mode for dense in (*projections, attention.output_dense)} == {mode}
    got = to_numpy(model((source, target), training=False))
    relative = np.abs(got - expected).max() / np.abs(expected).max()
    agreement = (got.argmax(-1) == expected.argmax(-1)).mean()
    max_relative, min_agreement = MODE_LIMITS[mode]
    assert relative < max_relative, relative
    assert agreement > min_agreement, agreement


@pytest.mark.parametrize("mode", ["int8", "int4"])
def test_a_quantized_transformer_saves_and_loads_with_the_same_outputs(mode: str, tmp_path):
    keras.utils.set_random_seed(1)
    model = Transformer.from_preset("tiny", vocabulary_size=VOCABULARY, num_encoder_layers=1)
    model.build()
    model.quantize(mode)
    source, target = random_ids((3, 10), 5), random_ids((3, 7), 6)
    expected = to_numpy(model((source, target), training=False))
    model.save(tmp_path / "quantized.keras")
    loaded = keras.models.load_model(tmp_path / "quantized.keras")
    projection = loaded.encoder.blocks[0].self_attention.key_dense
    assert projection.quantization_mode == mode
    if mode == "int8":  # weight-only, as it was quantized
        assert projection.inputs_quantizer is None
    assert loaded.decoder.blocks[0].feed_forward.inner_dense.quantization_mode == mode
    np.testing.assert_allclose(to_numpy(loaded((source, target), training=False)), expected)
    tokens = beam_search(loaded, source, beam_size=2, alpha=0.6, extra_length=4)[0]
    expected_tokens = beam_search(model, source, beam_size=2, alpha=0.6, extra_length=4)[0]
    np.testing.assert_array_equal(to_numpy(tokens), to_numpy(expected_tokens))


def test_int8_is_weight_only_unless_asked_and_keras_int8_warns():
    keras.utils.set_random_seed(2)
    weight_only = Transformer.from_preset("tiny", vocabulary_size=VOCABULARY, num_encoder_layers=1)
    weight_only.build()
    dynamic = Transformer.from_preset("tiny", vocabulary_size=VOCABULARY, num_encoder_layers=1)
    dynamic.build()
    dynamic.set_weights(weight_only.get_weights())
    source, target = random_ids((4, 12), 7), random_ids((4, 9), 8)
    expected = to_numpy(weight_only((source, target), training=False))
    weight_only.quantize("int8")
    with pytest.warns(UserWarning, match=r"weight_only=False.*48\.0 against 109\.5"):
        dynamic.quantize("int8", weight_only=False)
    denses = {
        name: [layer for layer in model._flatten_layers() if isinstance(layer, keras.layers.Dense)]
        for name, model in (("weight_only", weight_only), ("dynamic", dynamic))
    }
    assert all(dense.inputs_quantizer is None for dense in denses["weight_only"])
    assert all(dense.inputs_quantizer is not None for dense in denses["dynamic"])
    # Float activations: closer to float32 than Keras' int8, which also rounds the inputs.
    errors = {
        name: np.abs(to_numpy(model((source, target), training=False)) - expected).max()
        for name, model in (("weight_only", weight_only), ("dynamic", dynamic))
    }
    assert errors["weight_only"] < errors["dynamic"], errors
