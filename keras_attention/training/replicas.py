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
