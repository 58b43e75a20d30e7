"""A run's batches from one spec (`run_batches`, issue 36 point 7): the same batches, in the
same order, as the data/ primitives composed by hand (as `runs/prepare.py` composed them
before), for in-memory epochs and rounds, streamed rounds (one worker, and two reading by
file), subword sampling and gradient accumulation; and errors that name the field."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from keras_attention.data.corpus_files import ParallelFiles
from keras_attention.data.pipeline import encode_pairs, make_batches
from keras_attention.data.run_batches import (
    BatchingSpec,
    epoch_seed,
    file_sharding,
    run_batches,
)
from keras_attention.data.streaming import stream_batches
from keras_attention.data.subword_sampling import count_sampled_batches, sampled_batches
from tests.data.conftest import GENERATED_SOURCES, GENERATED_TARGETS
from tests.data.test_streaming import write_shards

SIZES = dict(max_tokens=256, max_length=32)
TRAIN = (GENERATED_SOURCES[:300], GENERATED_TARGETS[:300])
VAL = (GENERATED_SOURCES[300:340], GENERATED_TARGETS[300:340])
TEST = (GENERATED_SOURCES[340:], GENERATED_TARGETS[340:])
SPLITS = {"train": TRAIN, "val": VAL, "test": TEST}
STREAMED_SPLITS = {"train": ([], []), "val": VAL, "test": TEST}


def arrays(dataset: tf.data.Dataset) -> list[list[np.ndarray]]:
    """Every batch of one pass, its tensors flattened in order, as NumPy arrays."""
    return [[np.asarray(t) for t in tf.nest.flatten(b)] for b in dataset.as_numpy_iterator()]


def assert_same(got: tf.data.Dataset, expected: tf.data.Dataset | list) -> None:
    expected = expected if isinstance(expected, list) else arrays(expected)
    got = arrays(got)
    assert len(got) == len(expected) > 0
    for got_batch, expected_batch in zip(got, expected, strict=True):
        assert len(got_batch) == len(expected_batch)
        for a, b in zip(got_batch, expected_batch, strict=True):
            np.testing.assert_array_equal(a, b)


def by_hand(tokenizer, seed: int, shuffle: bool, split=TRAIN, replicas: int = 1):
    """`make_batches` over `encode_pairs`, as a corpus in memory was batched by hand."""
    encoded = encode_pairs(tokenizer, *split, max_length=SIZES["max_length"])
    return make_batches(encoded, **SIZES, batch_multiple=replicas, shuffle=shuffle, seed=seed)


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> ParallelFiles:
    folder = tmp_path_factory.mktemp("shards")
    sources, targets = write_shards(folder, *TRAIN, shards=4)
    return ParallelFiles(tuple(map(str, sources)), tuple(map(str, targets)))


def test_in_memory_epochs_are_the_seeded_passes_of_make_batches(tokenizer):
    spec = BatchingSpec(**SIZES, seed=7, replicas=2)
    data = run_batches(spec, tokenizer, SPLITS)
    for number in (0, 1, 4):
        expected = by_hand(tokenizer, epoch_seed(7, number), True, replicas=2)
        assert_same(data.train_batches(number), expected)
    assert_same(data.val_batches, by_hand(tokenizer, 7, False, VAL, replicas=2))
    assert_same(data.test_batches, by_hand(tokenizer, 7, False, TEST, replicas=2))
    assert data.batches_per_epoch == len(arrays(data.train_batches(0)))
    assert data.steps_per_batch == 1
    assert data.corpus is SPLITS and data.tokenizer is tokenizer
    # Asked again (a resumed run), an epoch is the same; another seed shuffles otherwise.
    assert_same(run_batches(spec, tokenizer, SPLITS).train_batches(1), data.train_batches(1))
    other = run_batches(dataclasses.replace(spec, seed=8), tokenizer, SPLITS).train_batches(1)
    sources = [[batch[0].tolist() for batch in arrays(d)] for d in (other, data.train_batches(1))]
    assert sources[0] != sources[1]


def test_in_memory_rounds_cut_the_seeded_passes_in_order(tokenizer):
    steps = 7
    data = run_batches(BatchingSpec(**SIZES, seed=3, round_steps=steps), tokenizer, SPLITS)
    passes = [b for e in range(3) for b in arrays(by_hand(tokenizer, epoch_seed(3, e), True))]
    assert len(passes) > 8 * steps
    for number in (0, 1, 5, 8):
        assert_same(data.train_batches(number), passes[number * steps : (number + 1) * steps])
    assert data.batches_per_epoch == steps


def test_a_streamed_round_is_the_start_of_the_stream_of_its_seed(tokenizer, shards):
    spec = BatchingSpec(**SIZES, seed=2, source="stream", round_steps=5)
    excluded = VAL[0] + TEST[0]
    data = run_batches(spec, tokenizer, STREAMED_SPLITS, shards, excluded)
    for number in (0, 3):
        stream = stream_batches(
            shards.sources, shards.targets, tokenizer, **SIZES, seed=epoch_seed(2, number),
            exclude_sources=excluded,
        )  # fmt: skip
        assert_same(data.train_batches(number), stream.take(5))
    assert (data.steps_per_batch, data.batches_per_epoch) == (1, 5)
    assert_same(data.val_batches, by_hand(tokenizer, 2, False, VAL))


def test_workers_reading_by_file_read_their_own_shards(tokenizer, shards):
    spec = BatchingSpec(**SIZES, seed=4, source="stream", round_steps=6, workers=2, worker=1)
    data = run_batches(spec, tokenizer, STREAMED_SPLITS, shards)
    stream = stream_batches(
        shards.sources, shards.targets, tokenizer, **SIZES, seed=epoch_seed(4, 1),
        workers=2, worker=1,
    )  # fmt: skip
    assert_same(data.train_batches(1), stream.take(3))  # 3 batches of 2 steps each
    assert (data.steps_per_batch, data.batches_per_epoch) == (2, 3)


def test_subword_sampling_samples_each_epoch_with_its_seed(tokenizer):
    alpha = 0.3
    data = run_batches(BatchingSpec(**SIZES, seed=5, subword_sampling=alpha), tokenizer, SPLITS)
    arguments = (tokenizer, *TRAIN, alpha)
    count = count_sampled_batches(*arguments, epoch_seed(5, 0), **SIZES)
    assert data.batches_per_epoch == count
    for number in (0, 2):
        expected = sampled_batches(*arguments, epoch_seed(5, number), count, **SIZES)
        assert_same(data.train_batches(number), expected)
    assert_same(data.val_batches, by_hand(tokenizer, 5, False, VAL))  # the best segmentation


def token_weights(batches: list[list[np.ndarray]], steps: int) -> list[np.ndarray]:
    """NumPy reference: batch i of an update of `steps` batches weighs `steps * N_i / N`."""
    tokens = [float(np.count_nonzero(target_out)) for _, _, target_out in batches]
    weights = []
    for start in range(0, len(batches) // steps * steps, steps):
        total = sum(tokens[start : start + steps])
        for i in range(start, start + steps):
            weights.append(np.full(batches[i][2].shape, steps * tokens[i] / total, np.float64))
    return weights


@pytest.mark.parametrize("round_steps", [None, 6])
def test_accumulated_batches_carry_their_token_share(tokenizer, round_steps):
    spec = BatchingSpec(**SIZES, seed=6, round_steps=round_steps, accumulate_steps=3)
    data = run_batches(spec, tokenizer, SPLITS)
    plain = run_batches(dataclasses.replace(spec, accumulate_steps=1), tokenizer, SPLITS)
    batches = arrays(plain.train_batches(1))
    got = arrays(data.train_batches(1))
    assert len(got) == len(batches) // 3 * 3 == data.batches_per_epoch
    weights = token_weights(batches, 3)
    for (source, target_in, target_out, weight), plain_batch, expected in zip(
        got, batches, weights, strict=False
    ):
        for a, b in zip((source, target_in, target_out), plain_batch, strict=True):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(weight, expected, rtol=1e-6)


@pytest.mark.parametrize(
    "settings, field",
    [
        (dict(max_tokens=0), "max_tokens"),
        (dict(max_length=-1), "max_length"),
        (dict(seed=1.5), "seed"),
        (dict(source="disk"), "source"),
        (dict(round_steps=0), "round_steps"),
        (dict(source="stream"), "round_steps"),
        (dict(accumulate_steps=0), "accumulate_steps"),
        (dict(round_steps=5, accumulate_steps=2), "round_steps"),
        (dict(subword_sampling=1.5), "subword_sampling"),
        (dict(subword_sampling=0.5, source="stream", round_steps=4), "subword_sampling"),
        (dict(replicas=0), "replicas"),
        (dict(workers=0), "workers"),
        (dict(workers=2, worker=2), "worker"),
        (dict(backup_every_steps=0), "backup_every_steps"),
    ],
)
def test_a_bad_spec_names_its_field(settings, field):
    with pytest.raises(ValueError, match=rf"\b{field}="):
        BatchingSpec(**{**SIZES, **settings})


def test_by_file_rounds_and_backups_must_fall_between_batches():
    spec = BatchingSpec(**SIZES, source="stream", round_steps=4, workers=2)
    assert file_sharding(spec, 2) == 2
    assert file_sharding(spec, 1) == 1  # fewer shards than workers: by data
    message = r"round_steps=3 \(a run's save_every_steps\) must be a multiple of the 2 workers"
    with pytest.raises(ValueError, match=message):
        file_sharding(dataclasses.replace(spec, round_steps=3), 2)
    with pytest.raises(ValueError, match="backup_every_steps=5 must be a multiple"):
        file_sharding(dataclasses.replace(spec, backup_every_steps=5), 4)
    # Accumulation weighs whole global batches: by data.
    assert file_sharding(dataclasses.replace(spec, round_steps=6, accumulate_steps=2), 2) == 1


def test_what_cannot_be_batched_is_named(tokenizer, shards):
    spec = BatchingSpec(**SIZES)
    with pytest.raises(ValueError, match="train_files must be given exactly when source='stream'"):
        run_batches(spec, tokenizer, SPLITS, shards)
    with pytest.raises(ValueError, match="train_files must be given exactly when source='stream'"):
        run_batches(dataclasses.replace(spec, source="stream", round_steps=4), tokenizer, SPLITS)
    with pytest.raises(ValueError, match="no training pair is at most max_length=2 tokens"):
        run_batches(dataclasses.replace(spec, max_length=2), tokenizer, SPLITS)
    few = {**SPLITS, "train": (TRAIN[0][:3], TRAIN[1][:3])}
    with pytest.raises(ValueError, match=r"accumulate_steps=50 is more than the \d+ batches"):
        run_batches(dataclasses.replace(spec, accumulate_steps=50), tokenizer, few)
