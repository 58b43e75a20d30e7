"""Validation and test splits held out of the training pairs: seeded, disjoint, sized as
documented, and their sources removed from training."""

import pytest

from keras_attention.data.held_out import (
    HELD_OUT_MAX,
    MIN_PAIRS_TO_HOLD_OUT,
    held_out_size,
    hold_out,
    remove_overlap,
    sample_pairs,
)


def corpus(count: int) -> tuple[list[str], list[str]]:
    return [f"source {i}" for i in range(count)], [f"target {i}" for i in range(count)]


@pytest.mark.parametrize("count, size", [(20, 1), (200, 10), (29_000, 1450), (10**7, 3000)])
def test_the_share_is_five_percent_capped(count: int, size: int):
    assert held_out_size(count) == size


def test_held_out_splits_are_seeded_disjoint_and_the_rest_is_training():
    sources, targets = corpus(400)
    first = hold_out(sources, targets, ("val", "test"), seed=3)
    again = hold_out(sources, targets, ("val", "test"), seed=3)
    other = hold_out(sources, targets, ("val", "test"), seed=4)
    assert first == again
    assert first[1]["val"] != other[1]["val"]
    (train_sources, train_targets), splits = first
    val, test = set(splits["val"][0]), set(splits["test"][0])
    assert len(val) == len(test) == 20 and not val & test
    assert not (val | test) & set(train_sources)
    assert sorted([*train_sources, *val, *test]) == sorted(sources)
    # Pairs stay pairs.
    for split_sources, split_targets in (splits["val"], (train_sources, train_targets)):
        assert [s.split()[1] for s in split_sources] == [t.split()[1] for t in split_targets]


def test_a_streamed_corpus_is_sampled_in_one_pass_alike():
    pairs = list(zip(*corpus(1000), strict=True))
    count, splits = sample_pairs(iter(pairs), ("val",), seed=0)
    assert count == 1000 and len(splits["val"][0]) == 50
    assert sample_pairs(iter(pairs), ("val",), seed=0)[1] == splits
    assert set(splits["val"][0]) <= {source for source, _ in pairs}
    big = ((f"s{i}", f"t{i}") for i in range(2 * HELD_OUT_MAX * 25))
    assert [len(s[0]) for s in sample_pairs(big, ("val", "test"), 1)[1].values()] == [3000] * 2


def test_too_small_a_corpus_asks_for_files():
    with pytest.raises(ValueError, match=r"19 pairs, fewer than the 20 .* give --valid and --test"):
        hold_out(*corpus(MIN_PAIRS_TO_HOLD_OUT - 1), ("val", "test"), seed=0)


def test_training_pairs_whose_source_is_held_out_are_removed_and_counted():
    sources = ["a", "b ", "c", "b", "d"]
    targets = ["A", "B1", "C", "B2", "D"]
    (kept_sources, kept_targets), removed = remove_overlap(sources, targets, [" b", "d"])
    assert removed == 3
    assert (kept_sources, kept_targets) == (["a", "c"], ["A", "C"])
    assert remove_overlap(sources, targets, ["z"]) == ((sources, targets), 0)
