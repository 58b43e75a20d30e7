"""The SentencePiece subword tokenizer: special ids, round trips, graph use, saving, errors."""

import io
import os
import re

import keras
import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

import keras_attention.data as data
from keras_attention.core import special_tokens
from keras_attention.data.generated_corpus import generated_splits
from keras_attention.data.tokenizer import SubwordTokenizer

VOCABULARY_SIZE = 300
SPECIAL_IDS = {"pad": 0, "unk": 1, "bos": 2, "eos": 3}


def corpus_texts(num_pairs: int) -> tuple[list[str], list[str]]:
    """Training sentences (both languages) and held-out ones of the generated corpus."""
    splits = generated_splits(num_train=num_pairs, num_val=0, num_test=40, seed=0)
    train = [text for pair in splits["train"] for text in pair]
    held_out = [text for pair in splits["test"] for text in pair]
    return train, held_out


TRAIN_TEXTS, HELD_OUT_TEXTS = corpus_texts(1500)


def processor_of(tokenizer: SubwordTokenizer) -> sentencepiece.SentencePieceProcessor:
    """The plain SentencePiece processor of the same model: the reference for ids."""
    return sentencepiece.SentencePieceProcessor(model_proto=tokenizer.model_proto)


def decoder_rows(pieces: list[list[int]], junk: list[int], pad: int) -> list[list[int]]:
    """Rows `[BOS, ids..., EOS, junk..., PAD * pad]` as a model's decoder would write them."""
    return [
        [special_tokens.BOS_ID, *ids, special_tokens.EOS_ID, *junk] + [0] * pad for ids in pieces
    ]


def train_with_other_ids() -> bytes:
    """A SentencePiece model with the library's defaults (unk=0, bos=1, eos=2, no pad)."""
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(TRAIN_TEXTS[:400]),
        model_writer=model,
        vocab_size=100,
        minloglevel=2,
    )
    return model.getvalue()


@pytest.fixture(scope="module", params=["unigram", "bpe"])
def tokenizer(request):
    return SubwordTokenizer.train(TRAIN_TEXTS, VOCABULARY_SIZE, model_type=request.param)


@pytest.fixture(scope="module")
def unigram():
    return SubwordTokenizer.train(TRAIN_TEXTS, VOCABULARY_SIZE)


def test_special_token_constants():
    constants = (data.PAD_ID, data.UNK_ID, data.BOS_ID, data.EOS_ID)
    assert constants == tuple(SPECIAL_IDS.values())
    module = (
        special_tokens.PAD_ID,
        special_tokens.UNK_ID,
        special_tokens.BOS_ID,
        special_tokens.EOS_ID,
    )
    assert module == constants


def test_trained_model_uses_the_special_ids(tokenizer):
    processor = processor_of(tokenizer)
    for name, expected in SPECIAL_IDS.items():
        assert getattr(processor, f"{name}_id")() == expected
    assert tokenizer.vocabulary_size == processor.get_piece_size() == VOCABULARY_SIZE
    pieces = tokenizer.id_to_piece(tf.constant([1, 2, 3])).numpy().tolist()
    assert pieces == [processor.id_to_piece(i).encode() for i in (1, 2, 3)]


def test_model_types_give_different_models():
    bpe = SubwordTokenizer.train(TRAIN_TEXTS, VOCABULARY_SIZE, model_type="bpe")
    unigram = SubwordTokenizer.train(TRAIN_TEXTS, VOCABULARY_SIZE, model_type="unigram")
    assert processor_of(bpe).encode(HELD_OUT_TEXTS) != processor_of(unigram).encode(HELD_OUT_TEXTS)


def test_tokenize_gives_ragged_int32_ids_without_bos_or_eos(tokenizer):
    sentences = [*HELD_OUT_TEXTS[:6], ""]
    ids = tokenizer.tokenize(tf.constant(sentences))
    assert isinstance(ids, tf.RaggedTensor)
    assert ids.dtype == tf.int32
    assert ids.to_list() == processor_of(tokenizer).encode(sentences)
    assert ids.row_lengths().numpy()[-1] == 0
    values = ids.flat_values.numpy()
    assert not np.isin(values, [data.PAD_ID, data.BOS_ID, data.EOS_ID]).any()
    assert values.min() >= 0 and values.max() < VOCABULARY_SIZE


def test_round_trip_of_held_out_sentences_with_umlauts(tokenizer):
    with_umlauts = [s for s in HELD_OUT_TEXTS if re.search("[äöüÄÖÜß]", s)]
    assert len(with_umlauts) >= 5
    decoded = tokenizer.detokenize(tokenizer.tokenize(HELD_OUT_TEXTS)).numpy()
    assert [text.decode("utf-8") for text in decoded] == HELD_OUT_TEXTS


@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_detokenize_drops_bos_padding_and_everything_from_eos(unigram, dense, dtype):
    sentences = HELD_OUT_TEXTS[:4]
    pieces = unigram.tokenize(sentences).to_list()
    junk = [*pieces[0][:3], data.EOS_ID, data.BOS_ID, *pieces[1][:2]]
    rows = decoder_rows(pieces, junk, pad=3)
    rows.append([data.PAD_ID] * 5)  # a filler row of a batch
    ids = tf.ragged.constant(rows, dtype=dtype)
    if dense:
        ids = ids.to_tensor(default_value=data.PAD_ID)
    decoded = [text.decode("utf-8") for text in unigram.detokenize(ids).numpy()]
    assert decoded == [*sentences, ""]


def test_detokenize_numpy_argmax_output(unigram):
    pieces = unigram.tokenize(HELD_OUT_TEXTS[:2]).to_list()
    width = max(len(p) for p in pieces) + 2
    rows = np.zeros((2, width), dtype=np.int64)
    for row, ids in zip(rows, decoder_rows(pieces, [], pad=0), strict=True):
        row[: len(ids)] = ids
    decoded = [text.decode("utf-8") for text in unigram.detokenize(rows).numpy()]
    assert decoded == HELD_OUT_TEXTS[:2]


def test_save_and_load_round_trip_atomically(unigram, tmp_path):
    folder = tmp_path / "run"  # created by save
    path = unigram.save(folder / "tokenizer.model")
    assert path == folder / "tokenizer.model"
    unigram.save(path)  # overwriting leaves no temporary file either
    assert os.listdir(folder) == ["tokenizer.model"]
    loaded = SubwordTokenizer.load(str(path))
    assert loaded.model_proto == unigram.model_proto
    assert loaded.vocabulary_size == unigram.vocabulary_size
    assert loaded.tokenize(HELD_OUT_TEXTS).to_list() == unigram.tokenize(HELD_OUT_TEXTS).to_list()


def test_load_missing_file_raises_file_not_found(tmp_path):
    path = tmp_path / "missing.model"
    with pytest.raises(FileNotFoundError, match=re.escape(str(path))):
        SubwordTokenizer.load(path)


def test_works_inside_tf_function(unigram):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def round_trip(sentences):
        ids = unigram.tokenize(sentences)
        return ids.to_tensor(), unigram.detokenize(ids.to_tensor())

    dense, decoded = round_trip(tf.constant(HELD_OUT_TEXTS[:5]))
    expected = unigram.tokenize(HELD_OUT_TEXTS[:5]).to_tensor()
    np.testing.assert_array_equal(dense.numpy(), expected.numpy())
    assert [text.decode("utf-8") for text in decoded.numpy()] == HELD_OUT_TEXTS[:5]


def test_works_in_a_tf_data_map(unigram):
    sentences = HELD_OUT_TEXTS[:5]
    dataset = tf.data.Dataset.from_tensor_slices(sentences).map(unigram.tokenize)
    rows = [ids.numpy().tolist() for ids in dataset]
    assert rows == processor_of(unigram).encode(sentences)
    batched = tf.data.Dataset.from_tensor_slices(sentences).batch(2)
    decoded = batched.map(lambda s: unigram.detokenize(unigram.tokenize(s)))
    assert [t.decode("utf-8") for batch in decoded for t in batch.numpy()] == sentences


def test_survives_resetting_the_random_seed():
    # `tf.random.set_seed` clears the eager kernel cache (tensorflow/text#570).
    tokenizer = SubwordTokenizer.train(TRAIN_TEXTS[:600], 200)
    expected = processor_of(tokenizer).encode(HELD_OUT_TEXTS)
    assert tokenizer.tokenize(HELD_OUT_TEXTS).to_list() == expected
    keras.utils.set_random_seed(7)
    tf.random.set_seed(8)
    assert tokenizer.tokenize(HELD_OUT_TEXTS).to_list() == expected
    decoded = tokenizer.detokenize(tokenizer.tokenize(HELD_OUT_TEXTS)).numpy()
    assert [text.decode("utf-8") for text in decoded] == HELD_OUT_TEXTS


def test_exports_in_a_saved_model(unigram, tmp_path):
    module = tf.Module()
    module.tokenizer = unigram
    module.round_trip = tf.function(
        lambda sentences: unigram.detokenize(unigram.tokenize(sentences)),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    tf.saved_model.save(module, str(tmp_path / "saved"))
    restored = tf.saved_model.load(str(tmp_path / "saved"))
    decoded = restored.round_trip(tf.constant(HELD_OUT_TEXTS[:3])).numpy()
    assert [text.decode("utf-8") for text in decoded] == HELD_OUT_TEXTS[:3]


@pytest.mark.parametrize(
    "texts, vocabulary_size, model_type, pattern",
    [
        (TRAIN_TEXTS[:50], 100, "word", "model_type"),
        (TRAIN_TEXTS[:50], 100, "BPE", "model_type"),
        ([], 100, "unigram", "texts"),
        (["", "   ", "\t"], 100, "unigram", "texts"),
        (TRAIN_TEXTS[:50], 100_000, "unigram", "vocabulary_size=100000"),
        (TRAIN_TEXTS[:50], 100_000, "bpe", "vocabulary_size=100000"),
        (TRAIN_TEXTS[:50], 4, "unigram", "vocabulary_size"),
    ],
)
def test_train_rejects_bad_arguments(texts, vocabulary_size, model_type, pattern):
    with pytest.raises(ValueError, match=re.escape(pattern)):
        SubwordTokenizer.train(texts, vocabulary_size, model_type=model_type)


@pytest.mark.parametrize(
    "model_proto, pattern",
    [
        (train_with_other_ids(), "pad=0, unk=1, bos=2, eos=3"),
        (b"not a sentencepiece model", "not a SentencePiece model"),
        (b"", "model_proto"),
        ("a string, not bytes", "model_proto"),
    ],
)
def test_constructor_rejects_other_models(model_proto, pattern):
    with pytest.raises(ValueError, match=re.escape(pattern)):
        SubwordTokenizer(model_proto)
