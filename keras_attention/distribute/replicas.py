"""Sums and seeds across the replicas of a `tf.distribute` strategy; plain values elsewhere.

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


def fold_replica_index(seed):
    """A seed pair made the replica's own: `seed + [index * 1_000_003, 0]` inside a replica of
    a TensorFlow strategy with several replicas; `seed` unchanged elsewhere (replica 0 too).

    Args:
        seed: a `(2,)` integer seed pair, as `keras.random.SeedGenerator.next` returns.

    Returns:
        The seed pair of this replica, in `seed`'s dtype.
    """
    replica = replica_index()
    if replica is None:
        return seed
    import tensorflow as tf

    seed = tf.convert_to_tensor(seed)
    first = tf.cast(replica, seed.dtype) * tf.constant(_REPLICA_SEED_STRIDE, seed.dtype)
    return seed + tf.stack([first, tf.zeros([], seed.dtype)])
