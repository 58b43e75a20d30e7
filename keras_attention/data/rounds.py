"""Training by steps: the batches of round `r` (`BatchingSpec.round_steps` of them, a run's
`save_every_steps`), the same ones whenever they are asked for, so that a resumed run trains
on an uninterrupted run's batches (`run_batches` makes them).

A round is a Keras epoch of the run (a checkpoint, a log row, a validation). From a corpus in
memory, the rounds cut the sequence of its seeded passes (pass `e` shuffled with the seed of
`e`) into pieces of `steps` batches: round `r` starts `r * steps` batches in, wherever that
falls. From a stream (`stream_batches`), which has no known length, round `r` is the first
`steps` batches of the stream shuffled with the seed of `r` (its shard order, its buffer):
every round starts from a new random choice of shards, so shards should hold fewer pairs than
a round reads.
"""

from collections.abc import Callable

import tensorflow as tf


def _exactly(dataset: tf.data.Dataset, steps: int) -> tf.data.Dataset:
    return dataset.take(steps).apply(tf.data.experimental.assert_cardinality(steps))


def in_memory_rounds(
    epoch_batches: Callable[[int], tf.data.Dataset], batches_per_epoch: int, steps: int
) -> Callable[[int], tf.data.Dataset]:
    """`round -> dataset` of `steps` batches, cut from the passes `epoch_batches(0), (1), ...`
    (each of `batches_per_epoch` batches, the same whenever asked for)."""

    def round_batches(number: int) -> tf.data.Dataset:
        start = number * steps
        epoch, offset = divmod(start, batches_per_epoch)
        dataset = epoch_batches(epoch).skip(offset)
        have = batches_per_epoch - offset
        while have < steps:
            epoch += 1
            dataset = dataset.concatenate(epoch_batches(epoch))
            have += batches_per_epoch
        return _exactly(dataset, steps)

    return round_batches


def stream_rounds(
    stream: Callable[[int], tf.data.Dataset], steps: int
) -> Callable[[int], tf.data.Dataset]:
    """`round -> dataset` of the first `steps` batches of `stream(round)` (repeated if a pass
    is shorter)."""
    return lambda number: _exactly(stream(number).repeat(), steps)
