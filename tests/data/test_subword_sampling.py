"""Subword regularization: sampled segmentations (`SubwordTokenizer.sample`) and the epochs
of batches built from them (`sampled_batches`), against the plain SentencePiece processor."""

from collections import Counter

import pytest
import sentencepiece

from keras_attention.data.pipeline import bucket_plan, encode_pairs
from keras_attention.data.subword_sampling import (
    count_sampled_batches,
    sample_pairs,
    sampled_batches,
)
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.runs.config import TrainConfig
from tests.data.conftest import GENERATED_SOURCES, GENERATED_TARGETS
from tests.data.test_pipeline import batch_rows, encoded_rows, epoch

SIZES = dict(max_tokens=256, max_length=32)


@pytest.fixture(scope="module", params=["unigram", "bpe"])
def any_tokenizer(request):
    return SubwordTokenizer.train(
        GENERATED_SOURCES + GENERATED_TARGETS, 300, model_type=request.param
    )


def decode(tokenizer: SubwordTokenizer, rows: list[list[int]]) -> list[str]:
    processor = sentencepiece.SentencePieceProcessor(model_proto=tokenizer.model_proto)
    return [processor.decode(row) for row in rows]


def test_sampled_segmentations_spell_the_sentence_and_differ_from_the_best(any_tokenizer):
    sentences = GENERATED_SOURCES[:200]
    best = any_tokenizer.tokenize(sentences).to_list()
    sampled = any_tokenizer.sample(sentences, 0.5, seed=3).to_list()
    assert decode(any_tokenizer, sampled) == decode(any_tokenizer, best) == sentences
    assert sum(a != b for a, b in zip(sampled, best, strict=True)) > 0
    # Longer on the whole: the best segmentation has the fewest pieces (unigram) or the
    # most merges (BPE).
    assert sum(map(len, sampled)) > sum(map(len, best))


def test_the_same_seed_samples_the_same_segmentations(any_tokenizer):
    sentences = GENERATED_TARGETS[:200]
    first = any_tokenizer.sample(sentences, 0.5, seed=11).to_list()
    assert any_tokenizer.sample(sentences, 0.5, seed=11).to_list() == first
    assert any_tokenizer.sample(sentences, 0.5, seed=12).to_list() != first


def test_a_smaller_alpha_splits_into_more_pieces(tokenizer):
    sentences = GENERATED_SOURCES[:300]
    pieces = [sum(tokenizer.sample(sentences, a, seed=0).row_lengths()) for a in (1.0, 0.1)]
    assert pieces[1] > pieces[0]


def test_a_lowercasing_tokenizer_samples_lowercased_text():
    targets = [t.capitalize() for t in GENERATED_TARGETS]
    lowering = SubwordTokenizer.train(GENERATED_SOURCES + targets, 300, recase_texts=targets)
    sentences = ["Der Hund", "DIE KATZE LÄUFT", *targets[:20]]
    sampled = lowering.sample(sentences, 0.5, seed=0).to_list()
    assert decode(lowering, sampled) == [s.lower() for s in sentences]


@pytest.mark.parametrize("alpha", [0.0, 1.5, -0.2, True, "0.5"])
def test_alpha_outside_the_interval_is_refused(tokenizer, alpha):
    with pytest.raises(ValueError, match=r"alpha must be a number in \(0, 1\]"):
        tokenizer.sample(["a"], alpha, seed=0)


def test_an_epoch_holds_every_sampled_pair_once_in_the_buckets(tokenizer):
    arguments = (tokenizer, GENERATED_SOURCES, GENERATED_TARGETS, 0.5)
    count = count_sampled_batches(*arguments, seed=5, **SIZES)
    dataset = sampled_batches(*arguments, seed=5, num_batches=count, **SIZES)
    assert int(dataset.cardinality()) == count
    batches = epoch(dataset)
    assert len(batches) == count
    lengths, sizes = bucket_plan(SIZES["max_length"], SIZES["max_tokens"])
    for source, _, _ in batches:
        assert source.shape[1] in lengths
        assert source.shape[0] == sizes[lengths.index(source.shape[1])]
    rows, _ = batch_rows(batches, length_multiple=8)
    expected = encoded_rows(sample_pairs(*arguments, seed=5, max_length=SIZES["max_length"]))
    assert Counter(rows) == expected
    plain = encode_pairs(tokenizer, GENERATED_SOURCES, GENERATED_TARGETS, SIZES["max_length"])
    assert expected != encoded_rows(plain)  # the segmentations were sampled


def test_an_epoch_is_as_long_as_asked(tokenizer):
    arguments = (tokenizer, GENERATED_SOURCES, GENERATED_TARGETS, 0.5)
    count = count_sampled_batches(*arguments, seed=5, **SIZES)
    expected = encoded_rows(sample_pairs(*arguments, seed=5, max_length=SIZES["max_length"]))
    shorter = epoch(sampled_batches(*arguments, seed=5, num_batches=count - 3, **SIZES))
    assert len(shorter) == count - 3
    rows, _ = batch_rows(shorter, length_multiple=8)
    assert not Counter(rows) - expected  # a part of the pairs, none twice
    longer = epoch(sampled_batches(*arguments, seed=5, num_batches=count + 4, **SIZES))
    assert len(longer) == count + 4
    rows, _ = batch_rows(longer, length_multiple=8)
    assert not expected - Counter(rows)  # every pair, then some of them again
    assert sum(Counter(rows).values()) > sum(expected.values())


def test_the_same_seed_gives_the_same_epoch_and_another_seed_another(tokenizer):
    arguments = (tokenizer, GENERATED_SOURCES, GENERATED_TARGETS, 0.5)

    def first_epoch(seed: int) -> list[bytes]:
        return [source.tobytes() for source, _, _ in epoch(sampled_batches(
            *arguments, seed=seed, num_batches=20, **SIZES))]  # fmt: skip

    assert first_epoch(9) == first_epoch(9)  # a resumed run trains on the same batches
    assert first_epoch(9) != first_epoch(10)


def test_no_pairs_are_refused(tokenizer):
    with pytest.raises(ValueError, match="at least one training pair"):
        sampled_batches(tokenizer, [], [], 0.5, seed=0, num_batches=1)
    with pytest.raises(ValueError, match="must align"):
        sample_pairs(tokenizer, ["a"], [], 0.5, seed=0)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (dict(subword_sampling=1.5), r"subword_sampling must be a number in \[0, 1\]"),
        (dict(subword_sampling=-0.1), r"subword_sampling must be a number in \[0, 1\]"),
        (dict(subword_sampling=True), r"subword_sampling must be a number in \[0, 1\]"),
        (
            dict(dataset="shards", data_dir=".", train_steps=4, subword_sampling=0.5),
            "subword_sampling needs a corpus in memory",
        ),
    ],
)
def test_the_run_settings_refuse_a_bad_subword_sampling(settings, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**settings).resolved().validate()
    assert TrainConfig(dataset="multi30k").resolved().subword_sampling == 0.0
