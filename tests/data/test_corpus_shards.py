"""The large synthetic corpus written as text shards (issue 14), read back by the stream."""

import gzip
from collections import Counter
from pathlib import Path

import pytest

from keras_attention.data.corpus_shards import shard_names, write_shard, write_sharded_corpus
from keras_attention.data.generated_corpus import _MAX_WORDS, _MIN_WORDS
from keras_attention.data.streaming import parallel_text


def lines(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return handle.read().splitlines()


@pytest.mark.parametrize("compress", [True, False])
def test_shards_hold_the_pairs_in_all_and_stream_back(tmp_path: Path, compress: bool):
    paths = write_sharded_corpus(tmp_path, 103, 4, seed=5, compress=compress)
    assert [(en.name, de.name) for en, de in paths] == shard_names(4, compress)
    sizes = [len(lines(en)) for en, _ in paths]
    assert sizes == [26, 26, 26, 25] and [len(lines(de)) for _, de in paths] == sizes
    pairs = [pair for en, de in paths for pair in zip(lines(en), lines(de), strict=True)]
    for en, de in pairs:
        assert _MIN_WORDS <= len(en.split()) <= _MAX_WORDS
        assert _MIN_WORDS <= len(de.split()) <= _MAX_WORDS
    streamed = parallel_text([en for en, _ in paths], [de for _, de in paths])
    got = Counter((s.decode(), t.decode()) for s, t in streamed.as_numpy_iterator())
    assert got == Counter(pairs)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        name for pair in shard_names(4, compress) for name in pair
    )  # no temporary file left


def test_a_shard_written_again_is_the_same(tmp_path: Path):
    first = write_shard(tmp_path / "a", 2, 4, 30, seed=1)
    again = write_shard(tmp_path / "b", 2, 4, 30, seed=1)
    other = write_shard(tmp_path / "c", 3, 4, 30, seed=1)
    assert lines(first[0]) == lines(again[0]) != lines(other[0])


def test_fewer_pairs_than_shards_is_refused(tmp_path: Path):
    with pytest.raises(ValueError, match="num_pairs"):
        write_sharded_corpus(tmp_path, 3, 4)
