"""The export's serving options (issue 13): decoding in length-sorted chunks, the `greedy`
signature and TF Serving's warm-up requests. TensorFlow only."""

from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.serving.chunks import map_length_sorted_chunks
from keras_attention.serving.export import (
    GREEDY_SIGNATURE_KEY,
    SIGNATURE_KEY,
    export_translator,
    load_exported,
)
from keras_attention.serving.translator import Translator
from keras_attention.serving.warmup_requests import read_warmup_requests, warmup_batches
from tests.conftest import to_numpy

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="the export is a TensorFlow SavedModel"
)
EXTRA = 4


@pytest.fixture(scope="module")
def sentences(corpus: dict) -> list[str]:
    """Sources of mixed lengths, a blank one and a repeated one among them."""
    english = [source for source, _ in corpus["test"]]
    return [english[0], "", english[1] + " " + english[2], *english[3:9], english[0], "  "]


def translate(model, tokenizer, sentences: list[str], beam_size: int, chunk_size) -> dict:
    translator = Translator(
        model, tokenizer, beam_size, max_source_length=24, extra_length=EXTRA, chunk_size=chunk_size
    )
    outputs = translator.translate(tf.constant(sentences))
    return {name: to_numpy(value) for name, value in outputs.items()}


# Chunks.


@pytest.fixture(scope="module")
def one_batch(model, tokenizer, sentences: list[str]) -> dict[int, dict]:
    """The translations of the sentences in one batch, by beam size."""
    return {
        beam_size: translate(model, tokenizer, sentences, beam_size, chunk_size=None)
        for beam_size in (1, 3)
    }


# Chunks of one sentence, chunks with a shorter last one, one chunk larger than the batch.
@pytest.mark.parametrize("beam_size", [1, 3])
@pytest.mark.parametrize("chunk_size", [1, 3, 100])
def test_chunked_decoding_gives_the_translations_of_one_batch(
    model, tokenizer, sentences: list[str], one_batch: dict, beam_size: int, chunk_size: int
):
    whole = one_batch[beam_size]
    chunked = translate(model, tokenizer, sentences, beam_size, chunk_size)
    assert chunked["translations"].tolist() == whole["translations"].tolist()
    np.testing.assert_allclose(chunked["scores"], whole["scores"], rtol=1e-5, atol=1e-5)
    assert whole["translations"][1] == b"" and whole["translations"][-1] == b""


def test_chunks_are_length_sorted_cut_to_their_longest_and_returned_in_order():
    lengths = tf.constant([3, 0, 5, 1, 3, 2, 4], tf.int32)
    width = int(tf.reduce_max(lengths)) + 1
    # Row i holds its own index in its first `lengths[i] + 1` places (EOS included), then 0.
    rows = [[i + 1] * (n + 1) + [0] * (width - n - 1) for i, n in enumerate(lengths.numpy())]
    source_ids = tf.constant(rows, tf.int32)
    seen = []

    def translate_chunk(chunk):
        seen.append(chunk.shape.as_list())
        text = tf.strings.reduce_join(tf.strings.as_string(chunk), axis=1, separator=",")
        return text, tf.cast(tf.shape(chunk)[1], tf.float32) * tf.ones(tf.shape(chunk)[:1])

    translations, widths = tf.function(map_length_sorted_chunks, autograph=False)(
        translate_chunk, source_ids, lengths, 3
    )
    texts = [t.decode() for t in translations.numpy()]
    # Each row comes back in its place, cut to its chunk's longest row: the sorted lengths
    # 0 1 2 | 3 3 4 | 5 make chunks of widths 3, 5 and 6.
    expected_width = {1: 3, 3: 3, 5: 3, 0: 5, 4: 5, 6: 5, 2: 6}
    for i, text in enumerate(texts):
        values = [int(v) for v in text.split(",")]
        assert len(values) == expected_width[i]
        assert values[: lengths[i] + 1] == [i + 1] * (int(lengths[i]) + 1)
        assert set(values[lengths[i] + 1 :]) <= {0}
    assert widths.numpy().tolist() == [expected_width[i] for i in range(7)]
    assert seen == [[None, None]]  # traced once, for every chunk


@pytest.mark.parametrize("chunk_size", [0, -2, 1.5, "8"])
def test_a_bad_chunk_size_is_refused_by_name(model, tokenizer, chunk_size):
    with pytest.raises(ValueError, match="chunk_size"):
        Translator(model, tokenizer, chunk_size=chunk_size)


# The export: the greedy signature and the warm-up requests.


@pytest.fixture(scope="module")
def translator(model, tokenizer) -> Translator:
    return Translator(model, tokenizer, 3, max_source_length=24, extra_length=EXTRA, chunk_size=4)


@pytest.fixture(scope="module")
def exported(translator: Translator, corpus: dict, tmp_path_factory) -> Path:
    warmup = [source for source, _ in corpus["val"][:5]]
    return export_translator(translator, tmp_path_factory.mktemp("export"), warmup_sentences=warmup)


def test_the_greedy_signature_is_greedy_search(
    exported: Path, sentences: list[str], one_batch: dict
):
    served = load_exported(exported, GREEDY_SIGNATURE_KEY)
    outputs = served(sentences=tf.constant(sentences))
    expected = one_batch[1]
    assert to_numpy(outputs["translations"]).tolist() == expected["translations"].tolist()
    np.testing.assert_allclose(to_numpy(outputs["scores"]), expected["scores"], rtol=1e-5)
    beam = one_batch[3]
    served_beam = load_exported(exported)(sentences=tf.constant(sentences))
    assert to_numpy(served_beam["translations"]).tolist() == beam["translations"].tolist()


def test_warmup_requests_parse_as_prediction_logs_and_replay(
    exported: Path, corpus: dict, translator: Translator
):
    requests = read_warmup_requests(exported)
    warmup = [source for source, _ in corpus["val"][:5]]
    batches = warmup_batches(warmup)
    names = [SIGNATURE_KEY, GREEDY_SIGNATURE_KEY, "n_best", "sample", "score"]
    assert [r.model_spec.signature_name for r in requests] == [
        name for name in names for _ in batches
    ]
    loaded = tf.saved_model.load(str(exported))
    for request, batch in zip(requests, batches * len(names), strict=True):
        inputs = {name: tf.make_ndarray(tensor) for name, tensor in request.inputs.items()}
        assert [s.decode() for s in inputs["sentences"]] == batch
        # Replayed as TF Serving replays it: every input the request holds.
        outputs = loaded.signatures[request.model_spec.signature_name](
            **{name: tf.constant(value) for name, value in inputs.items()}
        )
        assert to_numpy(outputs["scores"]).shape[0] == len(batch)
    direct = translator.translate(tf.constant(batches[-1]))
    replayed = loaded.signatures[SIGNATURE_KEY](sentences=tf.constant(batches[-1]))
    assert to_numpy(replayed["translations"]).tolist() == to_numpy(direct["translations"]).tolist()


@pytest.mark.parametrize("warmup", [[""], ["fine", "  "], "a string", [3]])
def test_bad_warmup_sentences_are_refused_before_any_write(
    translator: Translator, tmp_path: Path, warmup
):
    with pytest.raises(ValueError, match="warmup_sentences"):
        export_translator(translator, tmp_path / "export", warmup_sentences=warmup)
    assert not (tmp_path / "export").exists()


def _bfloat16_nodes(path: Path) -> int:
    """How many nodes of the SavedModel (graph and functions) have a bfloat16 dtype attribute."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved_model = saved_model_pb2.SavedModel()
    saved_model.ParseFromString((path / "saved_model.pb").read_bytes())
    bfloat16 = tf.bfloat16.as_datatype_enum
    count = 0
    for meta_graph in saved_model.meta_graphs:
        graph = meta_graph.graph_def
        nodes = [*graph.node, *(n for f in graph.library.function for n in f.node_def)]
        for node in nodes:
            types = [a.type for a in node.attr.values()] + [
                t for a in node.attr.values() for t in a.list.type
            ]
            count += bfloat16 in types
    return count


def test_a_mixed_precision_model_is_exported_as_its_float32_copy(tokenizer, tmp_path: Path):
    from keras_attention.models import Transformer

    from .conftest import TINY_MODEL

    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        keras.utils.set_random_seed(3)
        model = Transformer(tokenizer.vocabulary_size, **TINY_MODEL)
        model.build()
    finally:
        keras.config.set_dtype_policy(previous)
    translator = Translator(model, tokenizer, beam_size=2, extra_length=EXTRA)
    default = export_translator(translator, tmp_path / "float32")
    as_model = export_translator(translator, tmp_path / "model", dtype=None)
    assert _bfloat16_nodes(default) == 0 and _bfloat16_nodes(as_model) > 0
    assert model.compute_dtype == "bfloat16"  # the caller's model is left as it was

    sources = tf.constant(["the dog sees a cat", "a small house"])
    float32 = Translator(
        Transformer.from_config({**model.get_config(), "dtype": "float32"}),
        tokenizer,
        beam_size=2,
        extra_length=EXTRA,
    )
    float32.model.build()
    float32.model.set_weights(model.get_weights())
    want = float32.translate(sources)
    got = load_exported(default)(sentences=sources)
    assert got["translations"].numpy().tolist() == want["translations"].numpy().tolist()
    np.testing.assert_allclose(to_numpy(got["scores"]), to_numpy(want["scores"]), rtol=1e-5)
