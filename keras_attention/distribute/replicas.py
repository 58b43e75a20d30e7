"""Sums across the replicas of a `tf.distribute` strategy; plain values everywhere else.

Keras sums the replicas' gradients (it divides a loss by the number of replicas only for
"sum_over_batch_size"/"mean" reductions); these helpers let a loss normalise by a count
taken over the whole global batch instead, so that the sum over replicas is the global mean.
Under other backends, or without a strategy, they are the identity.
"""

import keras


def _strategy():
    if keras.backend.backend() != "tensorflow":
        return None
    import tensorflow as tf

    return tf.distribute.get_strategy() if tf.distribute.has_strategy() else None


def num_replicas() -> int:
    """Number of replicas in sync of the current strategy (1 without one)."""
    strategy = _strategy()
    return 1 if strategy is None else strategy.num_replicas_in_sync


def global_sum(value):
    """`value` summed over all replicas when called inside a replica; else `value`."""
    if num_replicas() == 1:
        return value
    import tensorflow as tf

    if tf.distribute.in_cross_replica_context():
        return value
    context = tf.distribute.get_replica_context()
    return context.all_reduce(tf.distribute.ReduceOp.SUM, value)


# Added to the first seed word per replica index: far from the small counter that the second
# word carries, so no two replicas' seed pairs ever meet.
_REPLICA_SEED_STRIDE = 1_000_003


def replica_index():
    """The index in sync of the replica running this code, under a TensorFlow strategy with
    several replicas (a tensor or an int); `None` elsewhere."""
    if num_replicas() == 1:
        return None
    import tensorflow as tf

    if tf.distribute.in_cross_replica_context():
        return None
    return tf.distribute.get_replica_context().replica_id_in_sync_group


def replica_dropout(inputs, rate: float, seed, noise_shape=None):
    """Dropout with the replica's index folded into the seed, under a TensorFlow strategy
    with several replicas; `None` elsewhere (use `keras.random.dropout` there).

    Args:
        inputs: the tensor to drop units of.
        rate: fraction of units to drop, in (0, 1).
        seed: an int or a `keras.random.SeedGenerator` (advanced once, as Keras does).
        noise_shape: shape of the mask (`None` entries take the input's size).
    """
    replica = replica_index()
    if replica is None:
        return None
    import tensorflow as tf

    pair = seed.next() if isinstance(seed, keras.random.SeedGenerator) else [seed, 0]
    offset = tf.stack([tf.cast(replica, tf.int64) * _REPLICA_SEED_STRIDE, tf.constant(0, tf.int64)])
    if noise_shape is not None:
        noise_shape = tf.stack(
            [
                tf.shape(inputs)[axis] if size is None else size
                for axis, size in enumerate(noise_shape)
            ]
        )
    return tf.nn.experimental.stateless_dropout(
        inputs, rate=rate, seed=tf.cast(pair, tf.int64) + offset, noise_shape=noise_shape
    )
