"""Training by steps (issue 14, `data/rounds.py`): the batches of each round, the same
whenever asked for."""

import tensorflow as tf

from keras_attention.data.rounds import in_memory_rounds, stream_rounds


def numbered_epochs(batches_per_epoch: int):
    """Epoch `e` is the batches `[e * 100, e * 100 + 1, ...]`: where a batch came from shows."""

    def epoch_batches(epoch: int) -> tf.data.Dataset:
        return tf.data.Dataset.range(epoch * 100, epoch * 100 + batches_per_epoch)

    return epoch_batches


def test_rounds_cut_the_passes_in_order_across_their_ends():
    rounds = in_memory_rounds(numbered_epochs(4), batches_per_epoch=4, steps=3)
    got = [list(rounds(r).as_numpy_iterator()) for r in range(5)]
    assert got == [[0, 1, 2], [3, 100, 101], [102, 103, 200], [201, 202, 203], [300, 301, 302]]
    assert all(int(rounds(r).cardinality()) == 3 for r in range(5))
    # A round longer than a pass spans several.
    long = in_memory_rounds(numbered_epochs(2), batches_per_epoch=2, steps=5)
    assert list(long(1).as_numpy_iterator()) == [201, 300, 301, 400, 401]


def test_a_stream_round_is_the_start_of_its_own_stream():
    rounds = stream_rounds(lambda r: tf.data.Dataset.range(r * 10, r * 10 + 2), steps=5)
    assert list(rounds(3).as_numpy_iterator()) == [30, 31, 30, 31, 30]  # a short pass repeats
    assert int(rounds(3).cardinality()) == 5
