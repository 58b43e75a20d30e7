"""Parallel text files streamed with `tf.data`: read, checked and tokenized in the pipeline.

Nothing is read into Python lists: memory does not grow with the corpus, and the first batch
is ready after its own lines are read, not after the whole corpus. One or many shards per
side, plain text or gzip (by the `.gz` suffix). Line `i` of a source shard translates line
`i` of its target shard; a pair of shards whose line counts differ, or a line that is not
UTF-8, stops the stream with an error that names the file and the line.
"""

import os
import re
from collections.abc import Sequence
from pathlib import Path

import tensorflow as tf

from keras_attention.data.corpus_files import MISALIGNED, ParallelFiles
from keras_attention.data.pipeline import (
    bucket_batches,
    bucket_plan,
    check_encoding,
    encode_ids,
    for_fit,
)
from keras_attention.data.text_files import BYTE_ORDER_MARK, check_gzip
from keras_attention.data.tokenizer import SubwordTokenizer

# A line of a text file never holds a line feed: this marks the end of a shard.
_END = "\n"
# A blank line: only the characters that Python's `str.isspace` calls whitespace (checked
# over every code point), so that a line is blank here when `line.strip()` is empty.
_BLANK = r"[\s\x{0b}\x{1c}-\x{1f}\x{85}\p{Z}]*"
TOKENIZE_BATCH = 512
CHECK_BATCH = 256  # lines of a shard checked at once
SHUFFLE_BUFFER = 100_000


def check_shards(
    source_files: Sequence[str | os.PathLike], target_files: Sequence[str | os.PathLike]
) -> tuple[list[str], list[str]]:
    """The shard lists as strings, checked: as many source as target shards, all present.

    Raises:
        ValueError: if the lists are empty or of different lengths.
        FileNotFoundError: naming a missing shard.
    """
    sources, targets = [str(p) for p in source_files], [str(p) for p in target_files]
    if not sources or len(sources) != len(targets):
        raise ValueError(
            "source_files and target_files must be non-empty lists of the same length (shard i "
            f"of one translates shard i of the other); got {len(sources)} and {len(targets)}"
        )
    for path in sources + targets:
        if not Path(path).is_file():
            raise FileNotFoundError(f"corpus file not found: {path}")
    return sources, targets


def train_shards(
    data_dir: str | os.PathLike, source: str = "en", target: str = "de"
) -> tuple[list[str], list[str]]:
    """The training shards of a folder: `train.*.{source}[.gz]` and their `{target}` twins.

    Raises:
        FileNotFoundError: if there is no source shard, or one has no twin (naming it).
    """
    folder = Path(data_dir)
    sources = sorted(
        p
        for p in folder.glob(f"train.*.{source}*")
        if p.name.endswith((f".{source}", f".{source}.gz"))
    )
    if not sources:
        raise FileNotFoundError(f"no train.*.{source} or train.*.{source}.gz shard in {folder}")
    targets = []
    for path in sources:
        stem = path.name[: path.name.rindex(f".{source}")]
        twin = folder / (stem + f".{target}" + (".gz" if path.suffix == ".gz" else ""))
        if not twin.is_file():
            raise FileNotFoundError(f"{path} has no target shard {twin}")
        targets.append(twin)
    return [str(p) for p in sources], [str(p) for p in targets]


def _lines(path: tf.Tensor) -> tf.data.Dataset:
    """The lines of one shard (gzip if its name ends in `.gz`), then the end marker."""
    compression = tf.where(tf.strings.regex_full_match(path, r".*\.gz"), "GZIP", "")
    lines = tf.data.TextLineDataset(path, compression_type=compression)
    return lines.concatenate(tf.data.Dataset.from_tensors(tf.constant(_END)))


def _first(numbers: tf.Tensor, where: tf.Tensor) -> tf.Tensor:
    """The line number of the first `True` of `where` (any number when there is none)."""
    return numbers[tf.argmax(tf.cast(where, tf.int32))]


def _cleaned(numbers: tf.Tensor, lines: tf.Tensor) -> tf.Tensor:
    """`lines` as `decode_lines` reads them: without the CR of a CRLF ending (a CRLF file's
    lines keep it), nor a byte-order mark that starts a file's first line."""
    lines = tf.strings.regex_replace(lines, "\r$", "")
    unmarked = tf.strings.regex_replace(lines, "^" + BYTE_ORDER_MARK, "", replace_global=False)
    return tf.where(tf.equal(numbers, 1), unmarked, lines)


def _checked(source_path: tf.Tensor, target_path: tf.Tensor):
    """A map over batches of `(line numbers, (sources, targets))` that stops on misaligned
    or bad lines and keeps the pairs with text on both sides (CR of CRLF endings and a
    first line's byte-order mark dropped)."""

    def check(numbers, pair):
        sources, targets = pair
        source_end, target_end = tf.equal(sources, _END), tf.equal(targets, _END)
        differ = tf.not_equal(source_end, target_end)
        source_ends_first = tf.reduce_any(source_end & differ)
        shorter = tf.where(source_ends_first, source_path, target_path)
        longer = tf.where(source_ends_first, target_path, source_path)
        # MISALIGNED's words, the files and the line put into its gaps.
        last_line = tf.strings.as_string(_first(numbers, differ) - 1)
        words = MISALIGNED.format(shorter="\0", lines="\0", longer="\0").split("\0")
        misaligned = tf.strings.join(
            [words[0], shorter, words[1], last_line, words[2], longer, words[3]]
        )
        checks = [tf.debugging.Assert(~tf.reduce_any(differ), [misaligned])]
        for path, lines in ((source_path, sources), (target_path, targets)):
            repaired = tf.strings.unicode_transcode(
                lines, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
            )
            bad = tf.not_equal(repaired, lines)
            where = [path, ":", tf.strings.as_string(_first(numbers, bad))]
            message = tf.strings.join([*where, ": not valid UTF-8"])
            checks.append(tf.debugging.Assert(~tf.reduce_any(bad), [message]))
        with tf.control_dependencies(checks):
            sources, targets = _cleaned(numbers, sources), _cleaned(numbers, targets)
        # Blank on either side (the end marker too): nothing to learn.
        blank = tf.strings.regex_full_match(sources, _BLANK) | tf.strings.regex_full_match(
            targets, _BLANK
        )
        return tf.boolean_mask(sources, ~blank), tf.boolean_mask(targets, ~blank)

    return check


def _shard_pairs(source_path: tf.Tensor, target_path: tf.Tensor) -> tf.data.Dataset:
    """Batches of the checked, non-blank pairs of one pair of shards."""
    pairs = tf.data.Dataset.zip((_lines(source_path), _lines(target_path))).enumerate(start=1)
    return pairs.batch(CHECK_BATCH).map(_checked(source_path, target_path))


def parallel_text(
    source_files: Sequence[str | os.PathLike],
    target_files: Sequence[str | os.PathLike],
    shuffle_files: bool = False,
    seed: int | None = None,
    cycle_length: int = 4,
    file_shard: tuple[int, int] | None = None,
) -> tf.data.Dataset:
    """Sentence pairs streamed from aligned text shards.

    Pairs where either side is blank are dropped (they teach nothing).

    Args:
        source_files: the source shards.
        target_files: the target shards, shard i aligned with source shard i.
        shuffle_files: visit the shards in a new seeded order every pass.
        seed: the shard-shuffling seed.
        cycle_length: shards read at once, their lines interleaved in blocks of `CHECK_BATCH`.
        file_shard: `(workers, index)`: read only shards `index, index + workers, ...`.

    Returns:
        A `tf.data.Dataset` of `(source, target)` `tf.string` scalars. Iterating it raises
        `tf.errors.InvalidArgumentError` naming the file and line of a misalignment or of a
        line that is not UTF-8. A corrupt gzip shard raises `tf.errors.DataLossError`
        (naming no file), and one cut short reads as a shorter shard: a run checks its
        streamed files in Python first (`corpus_files.iterate_pairs`).

    Raises:
        ValueError, FileNotFoundError: see `check_shards`; `ValueError` too if `file_shard`
            leaves no shard.
    """
    sources, targets = check_shards(source_files, target_files)
    if file_shard is not None:
        workers, index = file_shard
        count = len(sources)
        sources, targets = sources[index::workers], targets[index::workers]
        if not sources:
            raise ValueError(
                f"file_shard={file_shard} leaves worker {index} none of {count} shards"
            )
    shards = tf.data.Dataset.from_tensor_slices((sources, targets))
    if shuffle_files:
        shards = shards.shuffle(len(sources), seed=seed, reshuffle_each_iteration=True)
    # Batches of the shards' lines, interleaved: lines are checked a batch at a time.
    pairs = shards.interleave(
        _shard_pairs,
        cycle_length=min(cycle_length, len(sources)),
        block_length=1,
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    return pairs.unbatch()


def read_parallel(
    source_path: str | os.PathLike, target_path: str | os.PathLike
) -> tuple[list[str], list[str]]:
    """Reads aligned sentences into memory with the stream's own reader (`parallel_text`):
    line i of the source file translates line i of the target file.

    Pairs where either side is blank are dropped (they teach nothing); everything else is
    kept as it is, but for a line's CRLF ending and a byte-order mark that starts a file.

    Returns:
        `(sources, targets)`, two lists of the same length.

    Raises:
        FileNotFoundError: if a file does not exist.
        ValueError: for an empty file, a line that is not UTF-8 (naming file and line),
            different line counts (naming both files and where the shorter ends), or no pair
            left.
        CorruptFileError: (a `ValueError`) naming a gzip file that is truncated or corrupt.
    """
    check_shards([source_path], [target_path])
    for path in (source_path, target_path):
        if not Path(path).stat().st_size:
            raise ValueError(f"corpus file is empty: {path}")
        if str(path).endswith(".gz"):
            check_gzip(path)  # TensorFlow reads a truncated file as a shorter one
    sources, targets = [], []
    try:
        for source, target in parallel_text([source_path], [target_path]).batch(4096):
            sources += [line.decode("utf-8") for line in source.numpy()]
            targets += [line.decode("utf-8") for line in target.numpy()]
    except tf.errors.InvalidArgumentError as error:
        message = stream_error(error)
        if message is None:
            raise
        raise ValueError(message) from None
    if not sources:
        raise ValueError(f"no non-blank sentence pair in {source_path} and {target_path}")
    return sources, targets


def read_files(files: ParallelFiles) -> tuple[list[str], list[str]]:
    """`read_parallel` of every pair of `files` (a `ParallelFiles`), concatenated."""
    sources, targets = [], []
    for source_path, target_path in zip(files.sources, files.targets, strict=True):
        more_sources, more_targets = read_parallel(source_path, target_path)
        sources += more_sources
        targets += more_targets
    return sources, targets


def tokenize_pairs(
    pairs: tf.data.Dataset,
    tokenizer: SubwordTokenizer,
    max_length: int = 128,
    long_pairs: str = "drop",
) -> tf.data.Dataset:
    """Sentence pairs -> `(source ids + EOS, BOS + target ids + EOS)`, tokenized in batches.

    Over-long pairs (source with EOS, or BOS + target, longer than `max_length` tokens) are
    dropped or cut: `encode_ids`, the encoding of `encode_pairs`, on each batch of lines.

    Args:
        pairs: a dataset of `(source, target)` strings (`parallel_text`).
        tokenizer: the subword tokenizer.
        max_length: the longest sequence kept, in tokens.
        long_pairs: `"drop"` or `"cut"` (keep the first `max_length` tokens, ending with EOS).

    Returns:
        A dataset of `(source_ids, target_ids)` int32 vectors.
    """
    check_encoding(max_length, long_pairs)

    def encode(sources, targets):
        source_ids, target_ids, _ = encode_ids(
            tf.cast(tokenizer.tokenize(sources), tf.int32),
            tf.cast(tokenizer.tokenize(targets), tf.int32),
            max_length,
            long_pairs,
        )
        return source_ids, target_ids

    ids = pairs.batch(TOKENIZE_BATCH).map(encode, num_parallel_calls=tf.data.AUTOTUNE)
    return ids.unbatch()


def shards_by_file(num_shards: int, workers: int) -> bool:
    """Whether `workers` workers read a corpus of `num_shards` shards by file, each its own
    shards (`AutoShardPolicy.FILE`): when there are several workers and at least as many
    shards as workers. Otherwise every worker reads every shard and keeps its rows of each
    global batch (`AutoShardPolicy.DATA`)."""
    return 1 < workers <= num_shards


def stream_batches(
    source_files: Sequence[str | os.PathLike],
    target_files: Sequence[str | os.PathLike],
    tokenizer: SubwordTokenizer,
    max_tokens: int = 4096,
    max_length: int = 128,
    length_multiple: int = 8,
    batch_multiple: int = 1,
    shuffle: bool = True,
    seed: int | None = None,
    shuffle_buffer: int = SHUFFLE_BUFFER,
    long_pairs: str = "drop",
    workers: int = 1,
    worker: int = 0,
    exclude_sources: Sequence[str] = (),
) -> tf.data.Dataset:
    """Batches by number of tokens, in the fixed bucket shapes of `make_batches`, streamed
    from text shards: one pass over the corpus, its size unknown until read.

    Across the `workers` of a `MultiWorkerMirroredStrategy`, with at least as many shards
    as workers (`shards_by_file`), the batches are sharded by file: worker `w` reads only
    shards `w, w + workers, ...`, and every batch it builds is a whole global batch of
    `max_tokens` that `tf.distribute` splits over `workers` steps (each step takes one piece
    of it on each of the worker's replicas). A worker's `n` batches thus make `n * workers`
    steps. (This is `AutoShardPolicy.FILE`, done here: TensorFlow's automatic rewrite cannot
    find the files behind `bucket_by_sequence_length`.) With fewer shards, every worker
    reads every shard (the same seeded batches) and keeps its rows of each
    (`AutoShardPolicy.DATA`): a batch is one step.

    Args:
        source_files: the source shards (plain text or `.gz`, one sentence per line).
        target_files: the target shards, aligned with them.
        tokenizer: the subword tokenizer.
        max_tokens: padded tokens per batch, at most.
        max_length: the longest sequence kept, in tokens (longer pairs: `long_pairs`).
        length_multiple: padded lengths are multiples of this.
        batch_multiple: batch sizes are multiples of this (the number of replicas).
        shuffle: shuffle the shards' order, the pairs (in a buffer of `shuffle_buffer` pairs:
            memory is bounded by the buffer, not the corpus) and the batches, anew each pass.
        seed: shuffling seed.
        shuffle_buffer: pairs held for shuffling.
        long_pairs: `"drop"` or `"cut"` over-long pairs.
        workers: the workers of a multi-worker strategy that read the stream.
        worker: this worker's index, from 0.
        exclude_sources: sources whose pairs are left out (compared stripped): the
            validation and test sources, so that none is trained on.

    Returns:
        A `tf.data.Dataset` of `((source, target_in), target_out)` int32 batches (cardinality
        unknown).
    """
    lengths, sizes = bucket_plan(max_length, max_tokens, length_multiple, batch_multiple)
    by_file = shards_by_file(len(source_files), workers)
    if not 0 <= worker < workers:
        raise ValueError(f"worker must be in [0, workers={workers}); got worker={worker}")
    pairs = parallel_text(
        source_files,
        target_files,
        shuffle_files=shuffle,
        seed=seed,
        file_shard=(workers, worker) if by_file else None,
    )
    if exclude_sources:
        pairs = pairs.filter(_not_in(exclude_sources))
    if shuffle:
        pairs = pairs.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    ids = tokenize_pairs(pairs, tokenizer, max_length, long_pairs)
    batches = bucket_batches(ids, lengths, sizes, length_multiple, shuffle, seed)
    return for_fit(batches, by_file=by_file)


def _not_in(sentences: Sequence[str]):
    """A `filter` predicate of `(source, target)`: the stripped source is not in
    `sentences`."""
    keys = tf.constant(sorted({sentence.strip() for sentence in sentences}), tf.string)
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(keys, tf.ones_like(keys, tf.int32)), default_value=0
    )

    def keep(source, target):
        del target
        return tf.equal(table.lookup(tf.strings.strip(source)), 0)

    return keep


def stream_error(error: tf.errors.InvalidArgumentError) -> str | None:
    """The message of a stream's check (misaligned shards, a line not UTF-8) inside the
    error that iterating the stream raised; `None` for any other error."""
    match = re.search(r"assertion failed: \[(.*?)\]\s*(\n|$)", error.message)
    if match is None or not (
        match.group(1).startswith("parallel files differ") or "not valid UTF-8" in match.group(1)
    ):
        return None
    return match.group(1)
