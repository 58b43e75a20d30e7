"""Subword regularization (Kudo, 2018): each epoch segments the training pairs afresh,
sampling every sentence's subwords from the tokenizer's model instead of taking its best
segmentation, so that the model sees each word split in several ways.
"""

import tensorflow as tf

from keras_attention.data.pipeline import (
    EncodedPairs,
    bucket_batches,
    bucket_plan,
    count_batches,
    encode_ids,
    for_fit,
)
from keras_attention.data.tokenizer import SubwordTokenizer


def sample_pairs(
    tokenizer: SubwordTokenizer,
    sources: list[str],
    targets: list[str],
    alpha: float,
    seed: int,
    max_length: int = 128,
) -> EncodedPairs:
    """`encode_pairs` with sampled segmentations (`SubwordTokenizer.sample`); over-long pairs
    are dropped. The same `seed` gives the same encoding.

    Args:
        tokenizer: the subword tokenizer.
        sources: source sentences.
        targets: target sentences, aligned with `sources`.
        alpha: the sampling's smoothing exponent, in (0, 1] (see `SubwordTokenizer.sample`).
        seed: seed of the sampling.
        max_length: the longest sequence kept, in tokens.

    Returns:
        The `EncodedPairs`.
    """
    if len(sources) != len(targets):
        raise ValueError(
            f"sources and targets must align; got {len(sources)} sources, {len(targets)} targets"
        )
    source_ids = tokenizer.sample(sources, alpha, seed)
    target_ids = tokenizer.sample(targets, alpha, seed + 1)
    encoded_sources, encoded_targets, num_long = encode_ids(
        source_ids, target_ids, max_length, "drop"
    )
    return EncodedPairs(encoded_sources, encoded_targets, len(sources), int(num_long), 0)


def sampled_batches(
    tokenizer: SubwordTokenizer,
    sources: list[str],
    targets: list[str],
    alpha: float,
    seed: int,
    num_batches: int,
    max_tokens: int = 4096,
    max_length: int = 128,
    length_multiple: int = 8,
    batch_multiple: int = 1,
) -> tf.data.Dataset:
    """One epoch of `make_batches` over freshly sampled segmentations of the pairs.

    The sampling runs when the dataset is iterated (in `tf.py_function`, about a second per
    30,000 sentences), so building the datasets of many epochs ahead costs nothing. The
    epoch holds exactly `num_batches` batches, so that every epoch is as long for the
    learning-rate schedule (`count_sampled_batches` gives a good `num_batches`): a sampling
    that makes more batches leaves its last ones out, one that makes fewer starts its pairs
    over. The same `seed` gives the same batches, in the same order.

    Args:
        tokenizer: the subword tokenizer.
        sources: source sentences.
        targets: target sentences, aligned with `sources`.
        alpha: the sampling's smoothing exponent, in (0, 1] (see `SubwordTokenizer.sample`).
        seed: seed of the sampling and the shuffling.
        num_batches: batches of the epoch.
        max_tokens: padded tokens per batch, at most.
        max_length: longest sequence, in tokens.
        length_multiple: padded lengths are multiples of this.
        batch_multiple: batch sizes are multiples of this (the number of replicas).

    Returns:
        A `tf.data.Dataset` of `((source, target_in), target_out)` int32 batches, shuffled,
        with a cardinality of `num_batches`.
    """
    if not sources:
        raise ValueError("subword sampling needs at least one training pair; got none")
    lengths, sizes = bucket_plan(max_length, max_tokens, length_multiple, batch_multiple)

    def encode():
        encoded = sample_pairs(tokenizer, sources, targets, alpha, seed, max_length)
        return (
            encoded.sources.flat_values,
            encoded.sources.row_lengths(),
            encoded.targets.flat_values,
            encoded.targets.row_lengths(),
        )

    def slices(source_ids, source_lengths, target_ids, target_lengths):
        for tensor in (source_ids, source_lengths, target_ids, target_lengths):
            tensor.set_shape([None])
        return tf.data.Dataset.from_tensor_slices(
            (
                tf.RaggedTensor.from_row_lengths(source_ids, source_lengths),
                tf.RaggedTensor.from_row_lengths(target_ids, target_lengths),
            )
        )

    pairs = tf.data.Dataset.from_tensors(0).map(
        lambda _: tf.py_function(encode, [], [tf.int32, tf.int64, tf.int32, tf.int64])
    )
    pairs = pairs.flat_map(slices).shuffle(len(sources), seed=seed, reshuffle_each_iteration=True)
    dataset = bucket_batches(pairs, lengths, sizes, length_multiple, True, seed)
    return for_fit(dataset.repeat().take(num_batches))


def count_sampled_batches(
    tokenizer: SubwordTokenizer,
    sources: list[str],
    targets: list[str],
    alpha: float,
    seed: int,
    max_tokens: int = 4096,
    max_length: int = 128,
    length_multiple: int = 8,
    batch_multiple: int = 1,
) -> int:
    """The batches of one sampled epoch (`sampled_batches`' arguments): sampled
    segmentations are longer than the best ones, so they fill more batches."""
    lengths, sizes = bucket_plan(max_length, max_tokens, length_multiple, batch_multiple)
    encoded = sample_pairs(tokenizer, sources, targets, alpha, seed, max_length)
    return count_batches(encoded, lengths, sizes)
