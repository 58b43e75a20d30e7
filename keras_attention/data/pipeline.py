"""`tf.data` pipelines that batch by number of tokens, in length buckets of fixed shapes."""

import dataclasses
import logging

import numpy as np
import tensorflow as tf

from keras_attention.core.checks import check_positive_int
from keras_attention.core.special_tokens import BOS_ID, EOS_ID, PAD_ID
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.distribute.cluster import is_multi_worker

logger = logging.getLogger(__name__)

LONG_PAIR_POLICIES = ("drop", "cut")


@dataclasses.dataclass
class EncodedPairs:
    """Token ids of a parallel corpus, ready for batching.

    Attributes:
        sources: `tf.RaggedTensor` of source ids, each ending with EOS.
        targets: `tf.RaggedTensor` of target ids, `[BOS, ..., EOS]`.
        num_read: pairs read.
        num_dropped: over-long pairs dropped.
        num_cut: over-long pairs cut to `max_length`.
    """

    sources: tf.RaggedTensor
    targets: tf.RaggedTensor
    num_read: int
    num_dropped: int
    num_cut: int

    @property
    def num_pairs(self) -> int:
        """Pairs kept."""
        return int(self.sources.nrows())

    def lengths(self) -> np.ndarray:
        """Per pair, the padded length it needs: max(source length, target length - 1)."""
        source = self.sources.row_lengths().numpy()
        target = self.targets.row_lengths().numpy() - 1  # decoder input / output length
        return np.maximum(source, target)


def check_encoding(max_length: int, long_pairs: str) -> None:
    """Raises `ValueError` for a `long_pairs` policy or a `max_length` that `encode_pairs` and
    `data.streaming.tokenize_pairs` do not take."""
    if long_pairs not in LONG_PAIR_POLICIES:
        raise ValueError(f"long_pairs must be one of {LONG_PAIR_POLICIES}; got {long_pairs!r}")
    if max_length < 2:
        raise ValueError(f"max_length must be >= 2; got max_length={max_length}")


def encode_ids(
    source_ids: tf.RaggedTensor, target_ids: tf.RaggedTensor, max_length: int, long_pairs: str
) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.Tensor]:
    """Subword ids of a batch of pairs -> `(source ids + EOS, BOS + target ids + EOS,
    number of over-long pairs)`, the over-long pairs dropped or cut (see `encode_pairs`).

    The one encoding of every corpus: `encode_pairs` applies it to a corpus in memory,
    `data.streaming.tokenize_pairs` to each batch of lines of a stream.
    """
    too_long = (source_ids.row_lengths() + 1 > max_length) | (
        target_ids.row_lengths() + 1 > max_length
    )
    if long_pairs == "drop":
        source_ids = tf.ragged.boolean_mask(source_ids, ~too_long)
        target_ids = tf.ragged.boolean_mask(target_ids, ~too_long)
    else:
        source_ids, target_ids = source_ids[:, : max_length - 1], target_ids[:, : max_length - 1]
    rows = source_ids.nrows()
    eos = tf.fill([rows, 1], tf.constant(EOS_ID, source_ids.dtype))
    bos = tf.fill([rows, 1], tf.constant(BOS_ID, target_ids.dtype))
    return (
        tf.concat([source_ids, eos], axis=1),
        tf.concat([bos, target_ids, eos], axis=1),
        tf.reduce_sum(tf.cast(too_long, tf.int32)),
    )


def encode_pairs(
    tokenizer: SubwordTokenizer,
    sources: list[str],
    targets: list[str],
    max_length: int = 128,
    long_pairs: str = "drop",
) -> EncodedPairs:
    """Tokenizes sentence pairs in the graph, adds EOS/BOS, and drops or cuts over-long ones.

    A pair is over-long when its source (with EOS) or its decoder input (BOS + target) is
    longer than `max_length` tokens. How many were dropped or cut is logged and returned.

    Args:
        tokenizer: the subword tokenizer.
        sources: source sentences.
        targets: target sentences, aligned with `sources`.
        max_length: the longest sequence kept, in tokens.
        long_pairs: `"drop"` or `"cut"` (keep the first `max_length` tokens, ending with EOS).

    Returns:
        The `EncodedPairs`.
    """
    if len(sources) != len(targets):
        raise ValueError(
            f"sources and targets must align; got {len(sources)} sources, {len(targets)} targets"
        )
    check_encoding(max_length, long_pairs)
    encoded_sources, encoded_targets, num_long = encode_ids(
        tokenizer.tokenize(tf.constant(sources, tf.string)),
        tokenizer.tokenize(tf.constant(targets, tf.string)),
        max_length,
        long_pairs,
    )
    num_long = int(num_long)
    encoded = EncodedPairs(
        sources=encoded_sources,
        targets=encoded_targets,
        num_read=len(sources),
        num_dropped=num_long if long_pairs == "drop" else 0,
        num_cut=num_long if long_pairs == "cut" else 0,
    )
    if num_long:
        action = "dropped" if long_pairs == "drop" else "cut"
        logger.warning(
            "%d of %d pairs are longer than max_length=%d tokens and were %s",
            num_long,
            len(sources),
            max_length,
            action,
        )
    return encoded


def bucket_plan(
    max_length: int, max_tokens: int, length_multiple: int = 8, batch_multiple: int = 1
) -> tuple[list[int], list[int]]:
    """Padded lengths and batch sizes of the buckets.

    Lengths are the multiples of `length_multiple` up to `max_length` (rounded up); a
    bucket's batch size is the most sentences whose padded tokens fit in `max_tokens`,
    rounded down to a multiple of `batch_multiple` (the number of replicas).

    Returns:
        `(padded_lengths, batch_sizes)`.

    Raises:
        ValueError: for an argument that is not a positive integer, or `max_tokens < max_length`.
    """
    for name, value in (
        ("max_length", max_length),
        ("max_tokens", max_tokens),
        ("length_multiple", length_multiple),
        ("batch_multiple", batch_multiple),
    ):
        check_positive_int(name, value)
    if max_tokens < max_length:
        raise ValueError(
            f"max_tokens must be >= max_length so that the longest pair fits in a batch; got "
            f"max_tokens={max_tokens}, max_length={max_length}"
        )
    top = -(-max_length // length_multiple) * length_multiple
    lengths = list(range(length_multiple, top + 1, length_multiple))
    sizes = [
        max(batch_multiple, (max_tokens // n) // batch_multiple * batch_multiple) for n in lengths
    ]
    return lengths, sizes


def count_batches(encoded: EncodedPairs, lengths: list[int], sizes: list[int]) -> int:
    """The number of batches `make_batches` yields for one pass over `encoded`."""
    bucket = np.searchsorted(np.asarray(lengths), encoded.lengths(), side="left")
    counts = np.bincount(bucket, minlength=len(lengths))
    return int((-(-counts // np.asarray(sizes))).sum())


def _fill_batch(size_of_length: tf.Tensor, length_multiple: int):
    """Pads a bucket's last, partial batch with all-padding rows up to the bucket's size."""

    def fill(*tensors):
        length = tf.shape(tensors[0])[1]
        missing = tf.gather(size_of_length, length // length_multiple - 1) - tf.shape(tensors[0])[0]
        return tuple(tf.pad(t, [[0, missing], [0, 0]], constant_values=PAD_ID) for t in tensors)

    return fill


def make_batches(
    encoded: EncodedPairs,
    max_tokens: int = 4096,
    max_length: int = 128,
    length_multiple: int = 8,
    batch_multiple: int = 1,
    shuffle: bool = True,
    seed: int | None = None,
) -> tf.data.Dataset:
    """Batches pairs by number of tokens, in buckets of fixed padded lengths (like fairseq's
    `--max-tokens`), for `model.fit`.

    Each batch holds pairs of similar length, padded to the bucket's length (a multiple of
    `length_multiple`), so that the model sees a small fixed set of shapes (XLA compiles each
    shape once). Sources and decoder inputs share the padded length. A bucket's last, partial
    batch is completed with all-padding rows (which the loss and metrics ignore), so that no
    pair is lost and the shapes stay fixed.

    Args:
        encoded: the output of `encode_pairs` (built with the same or smaller `max_length`).
        max_tokens: padded tokens per batch (batch size x padded length), at most.
        max_length: longest sequence, in tokens.
        length_multiple: padded lengths are multiples of this.
        batch_multiple: batch sizes are multiples of this (the number of replicas).
        shuffle: reshuffle pairs and batches every epoch.
        seed: shuffling seed.

    Under `MultiWorkerMirroredStrategy` the dataset is sharded by data
    (`AutoShardPolicy.DATA`): every worker reads the whole corpus and builds the same global
    batches (give a `seed` so that they shuffle alike), and `model.fit` hands each worker its
    share of each global batch's rows. Sharding by file would need as many files as workers.

    Returns:
        A `tf.data.Dataset` of `((source, target_in), target_out)` int32 batches with a
        known cardinality.
    """
    if shuffle and seed is None and is_multi_worker():
        raise ValueError(
            "shuffle=True needs a seed under a multi-worker TF_CONFIG: every worker must "
            "build the same global batches"
        )
    longest = int(encoded.lengths().max()) if encoded.num_pairs else 0
    if longest > max_length:
        raise ValueError(
            f"encoded pairs are up to {longest} tokens long, more than max_length={max_length}; "
            "encode them with the same max_length"
        )
    lengths, sizes = bucket_plan(max_length, max_tokens, length_multiple, batch_multiple)
    num_batches = count_batches(encoded, lengths, sizes)
    dataset = tf.data.Dataset.from_tensor_slices((encoded.sources, encoded.targets))
    if shuffle:
        # (A buffer of 0 is an error; an empty corpus gives an empty dataset.)
        dataset = dataset.shuffle(
            max(1, encoded.num_pairs), seed=seed, reshuffle_each_iteration=True
        )
    dataset = bucket_batches(dataset, lengths, sizes, length_multiple, shuffle, seed)
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(num_batches))
    return for_fit(dataset)


def bucket_batches(
    pairs: tf.data.Dataset,
    lengths: list[int],
    sizes: list[int],
    length_multiple: int,
    shuffle: bool,
    seed: int | None,
) -> tf.data.Dataset:
    """Token-id pairs -> batches of the buckets of `bucket_plan` (see `make_batches`).

    Args:
        pairs: `(source ids + EOS, BOS + target ids + EOS)` int32 vectors, none longer than
            the largest bucket.
        lengths: the buckets' padded lengths.
        sizes: their batch sizes.
        length_multiple: the step between lengths.
        shuffle: shuffle the order of the batches (within a window of 64).
        seed: shuffling seed.

    Returns:
        A dataset of `((source, target_in), target_out)` int32 batches.
    """
    dataset = pairs.map(
        lambda source, target: (source, target[:-1], target[1:]),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    dataset = dataset.bucket_by_sequence_length(
        element_length_func=lambda source, target_in, _: tf.maximum(
            tf.shape(source)[0], tf.shape(target_in)[0]
        ),
        bucket_boundaries=[n + 1 for n in lengths[:-1]] + [lengths[-1] + 1],
        bucket_batch_sizes=[*sizes, sizes[-1]],
        padding_values=(PAD_ID, PAD_ID, PAD_ID),
        pad_to_bucket_boundary=True,
    )
    dataset = dataset.map(_fill_batch(tf.constant(sizes, tf.int32), length_multiple))
    if shuffle:
        dataset = dataset.shuffle(64, seed=seed, reshuffle_each_iteration=True)
    return dataset.map(lambda source, target_in, target_out: ((source, target_in), target_out))


def for_fit(dataset: tf.data.Dataset, by_file: bool = False) -> tf.data.Dataset:
    """Prefetching, and sharding across workers: by data (see `make_batches`), or not at
    all when the dataset already reads only this worker's files (see `stream_batches`)."""
    # By data, every worker runs this whole pipeline (same seed, same batches) and keeps its
    # share of the rows of each global batch.
    policy = tf.data.experimental.AutoShardPolicy
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = policy.OFF if by_file else policy.DATA
    return dataset.prefetch(tf.data.AUTOTUNE).with_options(options)
