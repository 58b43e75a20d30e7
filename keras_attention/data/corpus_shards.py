"""A large synthetic parallel corpus written as text shards, for streaming at WMT's scale.

The generated grammar's pairs, drawn with replacement (a corpus of millions of pairs, like
WMT's, holds repeats), written shard by shard so that memory stays flat whatever the size.
Each shard has its own seed, so shards can be written by several processes and any one
written again alike.
"""

import gzip
import os
import random
from pathlib import Path

from keras_attention.core.atomic_files import atomic_path
from keras_attention.core.checks import check_int_at_least
from keras_attention.data.generated_corpus import (
    _MAX_WORDS,
    _MIN_WORDS,
    render,
    sample_sentence,
    write_corpus,
)


def shard_names(num_shards: int, compress: bool = True) -> list[tuple[str, str]]:
    """The file names of the shards: `train.NNNNN-of-MMMMM.{en,de}[.gz]`."""
    suffix = ".gz" if compress else ""
    return [
        (
            f"train.{i:05d}-of-{num_shards:05d}.en{suffix}",
            f"train.{i:05d}-of-{num_shards:05d}.de{suffix}",
        )
        for i in range(num_shards)
    ]


def _open(path: Path, compress: bool):
    if compress:
        return gzip.open(path, "wt", encoding="utf-8", compresslevel=1)
    return path.open("w", encoding="utf-8")


def write_shard(
    directory: str | os.PathLike,
    shard: int,
    num_shards: int,
    num_pairs: int,
    seed: int = 0,
    compress: bool = True,
) -> tuple[Path, Path]:
    """Writes shard `shard` of `num_shards`: `num_pairs` pairs, atomically (a reader never sees
    a half-written shard). Returns its `(english, german)` paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    english, german = (directory / name for name in shard_names(num_shards, compress)[shard])
    rng = random.Random(f"{seed}/{shard}")
    with (
        atomic_path(english) as en_tmp,
        atomic_path(german) as de_tmp,
        _open(en_tmp, compress) as en_file,
        _open(de_tmp, compress) as de_file,
    ):
        written = 0
        while written < num_pairs:
            en, de = render(sample_sentence(rng))
            if all(_MIN_WORDS <= len(s.split()) <= _MAX_WORDS for s in (en, de)):
                en_file.write(en + "\n")
                de_file.write(de + "\n")
                written += 1
    return english, german


def write_sharded_corpus(
    directory: str | os.PathLike,
    num_pairs: int,
    num_shards: int,
    seed: int = 0,
    compress: bool = True,
    processes: int = 1,
) -> list[tuple[Path, Path]]:
    """Writes `num_pairs` generated pairs as `num_shards` pairs of text shards.

    Args:
        directory: the folder of the shards (created if missing).
        num_pairs: pairs in all, spread evenly (the first shards get one more when it does
            not divide).
        num_shards: shard pairs.
        seed: the corpus's seed.
        compress: gzip the shards (`.gz`).
        processes: shards written at once.

    Returns:
        The `(english, german)` paths of each shard.

    Raises:
        ValueError: if `num_shards` or `processes` < 1, or `num_pairs` < `num_shards`.
    """
    check_int_at_least("num_shards", num_shards, 1)
    check_int_at_least("processes", processes, 1)
    check_int_at_least("num_pairs", num_pairs, num_shards)
    sizes = [num_pairs // num_shards + (i < num_pairs % num_shards) for i in range(num_shards)]
    jobs = [(directory, i, num_shards, size, seed, compress) for i, size in enumerate(sizes)]
    if processes == 1:
        return [write_shard(*job) for job in jobs]
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        return pool.starmap(write_shard, jobs)


def write_held_out(
    directory: str | os.PathLike, num_pairs: int, seed: int = 0
) -> dict[str, tuple[Path, Path]]:
    """Writes `val.en`/`val.de` and `test.en`/`test.de` beside the shards: `num_pairs`
    distinct generated pairs each (`write_corpus` with no training split, another seed than
    the shards'; with a grammar of over 10^12 sentences, a repeat of a training pair is rare).
    """
    return write_corpus(directory, num_train=0, num_val=num_pairs, num_test=num_pairs,
                        seed=seed + 1_000_003, splits=("val", "test"))  # fmt: skip
