"""Encoding sentence pairs and batching them by tokens in length buckets (`tf.data`)."""

import logging
import math
from collections import Counter

import numpy as np
import pytest
import tensorflow as tf

from keras_attention.core.special_tokens import BOS_ID, EOS_ID, PAD_ID
from keras_attention.data.multi30k import load_multi30k
from keras_attention.data.pipeline import bucket_plan, encode_pairs, make_batches
from keras_attention.data.tokenizer import SubwordTokenizer
from tests.data.conftest import GENERATED_SOURCES, GENERATED_TARGETS, repeat
from tests.data.test_multi30k import MULTI30K_DIR, needs_multi30k

Batch = tuple[np.ndarray, np.ndarray, np.ndarray]  # source, target_in, target_out
Row = tuple[tuple[int, ...], tuple[int, ...]]  # source ids, target ids

LOGGER = "keras_attention.data.pipeline"


def encoded_rows(encoded) -> Counter:
    """The multiset of `(source, target)` id rows of `EncodedPairs`."""
    return Counter(
        (tuple(s), tuple(t))
        for s, t in zip(encoded.sources.to_list(), encoded.targets.to_list(), strict=True)
    )


def epoch(dataset: tf.data.Dataset) -> list[Batch]:
    """One pass over `dataset` as NumPy batches, checking the `((source, target_in),
    target_out)` int32 structure."""
    batches = []
    for (source, target_in), target_out in dataset:
        assert source.dtype == target_in.dtype == target_out.dtype == tf.int32
        batches.append((source.numpy(), target_in.numpy(), target_out.numpy()))
    return batches


def batch_rows(batches: list[Batch], length_multiple: int) -> tuple[list[Row], int]:
    """The real pairs of `batches`, in order, rebuilt as `(source, target)` rows, and the number
    of all-padding filler rows. Checks each real row: padding only at the end, target_in
    `[BOS, t...]`, target_out `[t..., EOS]` (target_in shifted by one), and the row in the
    smallest bucket that holds it."""
    rows, fillers = [], 0
    for source, target_in, target_out in batches:
        padded = source.shape[1]
        for s, t_in, t_out in zip(source, target_in, target_out, strict=True):
            if not (s.any() or t_in.any() or t_out.any()):
                fillers += 1
                continue
            m, n = int(np.count_nonzero(s)), int(np.count_nonzero(t_in))
            assert not s[m:].any() and not t_in[n:].any() and not t_out[n:].any()
            assert t_in[0] == BOS_ID and t_out[n - 1] == EOS_ID
            np.testing.assert_array_equal(t_out[: n - 1], t_in[1:n])
            assert padded == math.ceil(max(m, n) / length_multiple) * length_multiple
            rows.append((tuple(s[:m].tolist()), (*t_in[:n].tolist(), EOS_ID)))
    return rows, fillers


def check_batches(
    dataset: tf.data.Dataset,
    encoded,
    max_tokens: int,
    max_length: int,
    length_multiple: int,
    batch_multiple: int,
) -> list[Batch]:
    """Checks one epoch of `make_batches` against its contract; returns the batches."""
    batches = epoch(dataset)
    assert int(dataset.cardinality()) == len(batches)
    shapes = Counter()
    for source, target_in, target_out in batches:
        assert source.shape == target_in.shape == target_out.shape
        size, length = source.shape
        shapes[(size, length)] += 1
        assert length % length_multiple == 0 and length <= max_length
        assert size % batch_multiple == 0
        # Within budget and as large as allowed; only a batch of `batch_multiple` rows that
        # does not fit the budget may go over it.
        fits = size * length <= max_tokens
        assert fits or (size == batch_multiple and max_tokens // length < batch_multiple)
        assert not fits or (size + batch_multiple) * length > max_tokens
    assert len(shapes) <= math.ceil(max_length / length_multiple)
    rows, fillers = batch_rows(batches, length_multiple)
    assert Counter(rows) == encoded_rows(encoded)  # no pair lost or duplicated
    # Filler rows complete only the last, partial batch of a bucket.
    partial = Counter(source.shape for source, _, _ in batches if not source.any(axis=1).all())
    assert all(count == 1 for count in partial.values())
    assert all(source.any() for source, _, _ in batches)  # no batch of padding only
    assert fillers == sum(np.all(source == PAD_ID, axis=1).sum() for source, _, _ in batches)
    return batches


def flat_order(batches: list[Batch]) -> list:
    return [row.tobytes() for source, _, _ in batches for row in source if row.any()]


@pytest.fixture(scope="module")
def generated_encoded(tokenizer):
    return encode_pairs(tokenizer, GENERATED_SOURCES, GENERATED_TARGETS, max_length=32)


def test_encode_pairs_adds_eos_to_sources_and_bos_eos_to_targets(tokenizer):
    sources, targets = GENERATED_SOURCES[:20], GENERATED_TARGETS[:20]
    encoded = encode_pairs(tokenizer, sources, targets, max_length=512)
    source_ids = tokenizer.tokenize(sources).to_list()
    target_ids = tokenizer.tokenize(targets).to_list()
    assert encoded.sources.dtype == encoded.targets.dtype == tf.int32
    assert encoded.sources.to_list() == [[*ids, EOS_ID] for ids in source_ids]
    assert encoded.targets.to_list() == [[BOS_ID, *ids, EOS_ID] for ids in target_ids]
    assert (encoded.num_read, encoded.num_pairs) == (20, 20)
    assert (encoded.num_dropped, encoded.num_cut) == (0, 0)
    expected = [max(len(s) + 1, len(t) + 1) for s, t in zip(source_ids, target_ids, strict=True)]
    assert encoded.lengths().tolist() == expected


# Pairs of (source tokens, target tokens) with max_length=6: a source fits with its EOS up to
# 5 tokens, a target fits with its BOS (the decoder input) up to 5 tokens.
TOKEN_LENGTHS = [(5, 5), (6, 1), (1, 6), (6, 6), (2, 3), (7, 2)]


@pytest.mark.parametrize(
    "long_pairs, source_lengths, target_lengths, num_dropped, num_cut",
    [
        ("drop", [6, 3], [7, 5], 4, 0),
        ("cut", [6, 6, 2, 6, 3, 6], [7, 3, 7, 7, 5, 4], 0, 4),
    ],
)
def test_encode_pairs_drops_or_cuts_long_pairs(
    tokenizer,
    one_piece_word,
    caplog,
    long_pairs,
    source_lengths,
    target_lengths,
    num_dropped,
    num_cut,
):
    sources = [repeat(one_piece_word, s) for s, _ in TOKEN_LENGTHS]
    targets = [repeat(one_piece_word, t) for _, t in TOKEN_LENGTHS]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        encoded = encode_pairs(tokenizer, sources, targets, max_length=6, long_pairs=long_pairs)
    assert encoded.sources.row_lengths().numpy().tolist() == source_lengths
    assert encoded.targets.row_lengths().numpy().tolist() == target_lengths
    assert (encoded.num_read, encoded.num_pairs) == (6, len(source_lengths))
    assert (encoded.num_dropped, encoded.num_cut) == (num_dropped, num_cut)
    assert max(encoded.lengths()) <= 6
    for source in encoded.sources.to_list():
        assert source[-1] == EOS_ID and EOS_ID not in source[:-1]
    for target in encoded.targets.to_list():
        assert target[0] == BOS_ID and target[-1] == EOS_ID
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "4 of 6" in warnings[0] and "max_length=6" in warnings[0]
    assert ("dropped" if long_pairs == "drop" else "cut") in warnings[0]


def test_encode_pairs_logs_nothing_when_all_pairs_fit(tokenizer, caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        encode_pairs(tokenizer, GENERATED_SOURCES[:5], GENERATED_TARGETS[:5], max_length=512)
    assert not caplog.records


@pytest.mark.parametrize(
    "sources, targets, kwargs, name",
    [
        (["a", "b"], ["c"], {}, "sources"),
        (["a"], ["c"], {"long_pairs": "keep"}, "long_pairs"),
        (["a"], ["c"], {"max_length": 1}, "max_length"),
    ],
)
def test_encode_pairs_rejects_bad_arguments(tokenizer, sources, targets, kwargs, name):
    with pytest.raises(ValueError, match=name):
        encode_pairs(tokenizer, sources, targets, **kwargs)


@pytest.mark.parametrize(
    "args, lengths, sizes",
    [
        ((32, 100, 8, 1), [8, 16, 24, 32], [12, 6, 4, 3]),
        ((32, 100, 8, 4), [8, 16, 24, 32], [12, 4, 4, 4]),  # 4 x 32 goes over: one per replica
        ((20, 64, 8, 1), [8, 16, 24], [8, 4, 2]),  # max_length rounded up to a multiple
        ((16, 16, 16, 2), [16], [2]),
    ],
)
def test_bucket_plan(args, lengths, sizes):
    assert bucket_plan(*args) == (lengths, sizes)


@pytest.mark.parametrize(
    "max_tokens, max_length, length_multiple, batch_multiple, shuffle",
    [
        (256, 32, 8, 1, False),
        (100, 32, 8, 4, True),  # the 32-token bucket cannot hold 4 pairs in 100 tokens
        (60, 24, 4, 3, True),
        (32, 32, 16, 1, False),
    ],
)
def test_make_batches_on_the_generated_corpus(
    tokenizer, max_tokens, max_length, length_multiple, batch_multiple, shuffle
):
    encoded = encode_pairs(tokenizer, GENERATED_SOURCES, GENERATED_TARGETS, max_length)
    assert encoded.num_pairs > 100
    dataset = make_batches(
        encoded, max_tokens, max_length, length_multiple, batch_multiple, shuffle, seed=3
    )
    check_batches(dataset, encoded, max_tokens, max_length, length_multiple, batch_multiple)


@needs_multi30k
def test_make_batches_on_multi30k():
    sources, targets = load_multi30k(MULTI30K_DIR)["train"]
    sources, targets = sources[:3000], targets[:3000]
    multi30k_tokenizer = SubwordTokenizer.train(sources + targets, 1000)
    encoded = encode_pairs(multi30k_tokenizer, sources, targets, max_length=64)
    assert encoded.num_pairs > 2900
    dataset = make_batches(encoded, max_tokens=1024, max_length=64, batch_multiple=2, seed=0)
    batches = check_batches(dataset, encoded, 1024, 64, 8, 2)
    assert len({source.shape for source, _, _ in batches}) >= 3


@pytest.mark.parametrize("seed", [0, None])
def test_shuffle_changes_the_order_each_epoch_but_not_the_pairs(generated_encoded, seed):
    dataset = make_batches(generated_encoded, max_tokens=128, max_length=32, seed=seed)
    first, second = epoch(dataset), epoch(dataset)
    assert flat_order(first) != flat_order(second)
    assert Counter(batch_rows(first, 8)[0]) == Counter(batch_rows(second, 8)[0])
    assert Counter(batch_rows(first, 8)[0]) == encoded_rows(generated_encoded)


def test_without_shuffle_the_order_is_deterministic(generated_encoded):
    def build():
        return make_batches(generated_encoded, max_tokens=128, max_length=32, shuffle=False)

    dataset = build()
    passes = [epoch(dataset), epoch(dataset), epoch(build())]
    for other in passes[1:]:
        assert len(other) == len(passes[0])
        for batch, other_batch in zip(passes[0], other, strict=True):
            for array, other_array in zip(batch, other_batch, strict=True):
                np.testing.assert_array_equal(array, other_array)


def test_make_batches_of_no_pairs_is_empty(tokenizer, one_piece_word):
    long_pair = [repeat(one_piece_word, 20)]
    encoded = encode_pairs(tokenizer, long_pair, long_pair, max_length=8)
    assert encoded.num_pairs == 0
    for shuffle in (True, False):
        dataset = make_batches(encoded, max_tokens=64, max_length=8, shuffle=shuffle)
        assert int(dataset.cardinality()) == 0
        assert epoch(dataset) == []


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"max_tokens": 31, "max_length": 32}, "max_tokens"),
        ({"max_length": 32, "length_multiple": 0}, "length_multiple"),
        ({"max_length": 32, "batch_multiple": 0}, "batch_multiple"),
        ({"max_length": 32, "batch_multiple": 2.5}, "batch_multiple"),
        ({"max_length": 16}, "max_length=16"),  # the pairs were encoded for 32
    ],
)
def test_make_batches_rejects_bad_arguments(generated_encoded, kwargs, name):
    with pytest.raises(ValueError, match=name):
        make_batches(generated_encoded, **kwargs)
