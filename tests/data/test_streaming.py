"""Parallel text shards streamed with `tf.data` (issue 14): the same pairs and batches as the
in-memory path, memory bounded by buffers, and errors that name the file and line."""

import gzip
from collections import Counter
from pathlib import Path

import pytest
import tensorflow as tf

from keras_attention.data.pipeline import bucket_plan, encode_pairs
from keras_attention.data.streaming import (
    parallel_text,
    read_parallel,
    stream_batches,
    stream_error,
    tokenize_pairs,
)
from tests.data.conftest import GENERATED_SOURCES, GENERATED_TARGETS, repeat
from tests.data.test_pipeline import batch_rows, encoded_rows, epoch, flat_order


def write_shards(folder: Path, sources: list[str], targets: list[str], shards: int) -> tuple:
    """`sources`/`targets` split round-robin into `shards` pairs of files, every other one
    gzipped; returns the two lists of paths."""
    source_files, target_files = [], []
    for shard in range(shards):
        for lines, suffix, files in ((sources, "en", source_files), (targets, "de", target_files)):
            text = "".join(line + "\n" for line in lines[shard::shards])
            path = folder / (f"train.{shard}.{suffix}" + (".gz" if shard % 2 else ""))
            if shard % 2:
                with gzip.open(path, "wt", encoding="utf-8") as handle:
                    handle.write(text)
            else:
                path.write_text(text, encoding="utf-8")
            files.append(path)
    return source_files, target_files


def pairs_of(dataset: tf.data.Dataset) -> list[tuple[str, str]]:
    return [(s.decode(), t.decode()) for s, t in dataset.as_numpy_iterator()]


def stream_message(dataset: tf.data.Dataset) -> str:
    """The message of the error that iterating `dataset` raises."""
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        for _ in dataset:
            pass
    message = stream_error(error.value)
    assert message is not None, error.value.message
    return message


def test_one_shard_gives_the_pairs_of_read_parallel(tmp_path: Path):
    (tmp_path / "s.en").write_bytes(b"A dog runs.\r\nTwo men\n\n  \nLast one\n")
    (tmp_path / "s.de").write_bytes(b"Ein Hund rennt.\r\nZwei M\xc3\xa4nner\nx\ny\nDer letzte\n")
    want = list(zip(*read_parallel(tmp_path / "s.en", tmp_path / "s.de"), strict=True))
    assert pairs_of(parallel_text([tmp_path / "s.en"], [tmp_path / "s.de"])) == want
    assert want[1] == ("Two men", "Zwei Männer") and len(want) == 3  # blank pairs dropped


@pytest.mark.parametrize("shards", [1, 3, 8])
def test_every_pair_of_every_shard_comes_once(tmp_path: Path, shards: int):
    sources, targets = GENERATED_SOURCES[:50], GENERATED_TARGETS[:50]
    files = write_shards(tmp_path, sources, targets, shards)
    got = pairs_of(parallel_text(*files))
    assert Counter(got) == Counter(zip(sources, targets, strict=True))
    # Shard files shuffled with a seed: the same pairs, in an order set by the seed.
    shuffled = [pairs_of(parallel_text(*files, shuffle_files=True, seed=4)) for _ in range(2)]
    assert Counter(shuffled[0]) == Counter(got) and shuffled[0] == shuffled[1]


@pytest.mark.parametrize("longer", ["source", "target"])
def test_misaligned_shards_name_the_files_and_the_line(tmp_path: Path, longer: str):
    files = write_shards(tmp_path, GENERATED_SOURCES[:9], GENERATED_TARGETS[:9], 3)
    sources, targets = files
    cut = targets[1] if longer == "source" else sources[1]  # a gzipped shard of 3 lines
    with gzip.open(cut, "rt", encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    with gzip.open(cut, "wt", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in lines[:2]))
    other = sources[1] if longer == "source" else targets[1]
    message = stream_message(parallel_text(sources, targets))
    assert message.startswith("parallel files differ in length")
    assert f"{cut} ends after line 2" in message and f"{other} goes on" in message


def test_a_line_that_is_not_utf8_is_named(tmp_path: Path):
    (tmp_path / "a.en").write_bytes(b"fine\nalso fine\nbad \xff\xfe\n")
    (tmp_path / "a.de").write_text("gut\nauch gut\nschlecht\n")
    message = stream_message(parallel_text([tmp_path / "a.en"], [tmp_path / "a.de"]))
    assert message == f"{tmp_path / 'a.en'}:3: not valid UTF-8"


def test_other_errors_are_not_taken_for_stream_errors():
    error = tf.errors.InvalidArgumentError(None, None, "assertion failed: [x must be positive]")
    assert stream_error(error) is None


def test_shard_lists_are_checked(tmp_path: Path):
    (tmp_path / "a.en").write_text("a\n")
    with pytest.raises(ValueError, match="same length"):
        parallel_text([tmp_path / "a.en"], [])
    with pytest.raises(FileNotFoundError, match=r"missing\.de"):
        parallel_text([tmp_path / "a.en"], [tmp_path / "missing.de"])


@pytest.mark.parametrize("long_pairs", ["drop", "cut"])
def test_tokenized_stream_equals_encode_pairs(
    tmp_path: Path, tokenizer, one_piece_word, long_pairs
):
    lengths = [(3, 4), (9, 2), (2, 9), (5, 5), (6, 1)] * 3
    sources = [repeat(one_piece_word, s) for s, _ in lengths] + GENERATED_SOURCES[:20]
    targets = [repeat(one_piece_word, t) for _, t in lengths] + GENERATED_TARGETS[:20]
    files = write_shards(tmp_path, sources, targets, 1)
    streamed = tokenize_pairs(parallel_text(*files), tokenizer, 7, long_pairs)
    rows = [(tuple(s), tuple(t)) for s, t in streamed.as_numpy_iterator()]
    encoded = encode_pairs(tokenizer, sources, targets, max_length=7, long_pairs=long_pairs)
    assert rows == [
        (tuple(s), tuple(t))
        for s, t in zip(encoded.sources.to_list(), encoded.targets.to_list(), strict=True)
    ]  # the same ids, in the same order


def test_stream_batches_hold_every_pair_once_in_the_bucket_shapes(tmp_path: Path, tokenizer):
    files = write_shards(tmp_path, GENERATED_SOURCES, GENERATED_TARGETS, 4)
    encoded = encode_pairs(tokenizer, GENERATED_SOURCES, GENERATED_TARGETS, max_length=32)
    lengths, sizes = bucket_plan(32, 256, 8)
    dataset = stream_batches(*files, tokenizer, max_tokens=256, max_length=32, seed=3)
    assert int(dataset.cardinality()) == tf.data.UNKNOWN_CARDINALITY
    batches = epoch(dataset)
    shapes = {(s.shape[0], s.shape[1]) for s, _, _ in batches}
    assert shapes <= set(zip(sizes, lengths, strict=True))
    rows, _ = batch_rows(batches, 8)
    assert Counter(rows) == encoded_rows(encoded)  # no pair lost or duplicated
    # A new order each pass, the same first pass for the same seed.
    again = stream_batches(*files, tokenizer, max_tokens=256, max_length=32, seed=3)
    assert flat_order(epoch(again)) == flat_order(batches) != flat_order(epoch(dataset))


def test_workers_read_by_file_only_when_each_has_a_shard():
    from keras_attention.data.streaming import shards_by_file

    assert not shards_by_file(8, 1)  # one worker: nothing to shard
    assert shards_by_file(2, 2) and shards_by_file(8, 3)
    assert not shards_by_file(1, 2)  # a worker would have no shard: by data


def test_a_file_shard_reads_every_workers_shards_and_no_other(tmp_path: Path):
    sources, targets = GENERATED_SOURCES[:40], GENERATED_TARGETS[:40]
    files = write_shards(tmp_path, sources, targets, 5)
    everything = Counter(zip(sources, targets, strict=True))
    seen = Counter()
    for worker in range(2):
        got = pairs_of(parallel_text(*files, shuffle_files=True, seed=1, file_shard=(2, worker)))
        # Worker w reads shards w, w + 2, ... (shard i holds pairs i, i + 5, ...).
        mine = Counter()
        for shard in range(worker, 5, 2):
            mine.update(zip(sources[shard::5], targets[shard::5], strict=True))
        assert Counter(got) == mine
        seen.update(got)
    assert seen == everything
    with pytest.raises(ValueError, match=r"file_shard=\(8, 6\) leaves worker 6 none of 5 shards"):
        parallel_text(*files, file_shard=(8, 6))
