"""Dropout whose masks differ between the replicas of a `tf.distribute` strategy.

Keras 3 draws dropout masks from a seed state that `tf.distribute` mirrors: every replica (every
device of a `MirroredStrategy`, every worker of a `MultiWorkerMirroredStrategy`) reads the same
seed and, for equal shapes, drops the same units of its own share of the batch. The examples of
one global batch then share masks in groups of the number of replicas, which one device never
does. Here the replica's index is folded into the seed, so each replica draws its own masks.
Replica 0, one device, and the other backends get exactly Keras's masks.
"""

import keras

# Added to the first seed word per replica index: far from the small counter that the second
# word carries, so no two replicas' seed pairs ever meet.
_REPLICA_SEED_STRIDE = 1_000_003


def _replica_index():
    """The replica's index in sync when a TensorFlow strategy with several replicas is running
    this code in a replica; else `None`."""
    if keras.backend.backend() != "tensorflow":
        return None
    import tensorflow as tf

    if not tf.distribute.has_strategy() or tf.distribute.in_cross_replica_context():
        return None
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return None
    return context.replica_id_in_sync_group


def dropout(inputs, rate: float, seed=None, noise_shape=None):
    """`keras.random.dropout` with a different mask on each replica of a strategy.

    Args:
        inputs: the tensor to drop units of.
        rate: fraction of units to drop, in [0, 1).
        seed: an int or a `keras.random.SeedGenerator`, as for `keras.random.dropout`.
        noise_shape: shape of the mask, broadcast over `inputs` (`None` entries take the
            input's size).

    Returns:
        `inputs` with units dropped and the others scaled by `1 / (1 - rate)`.
    """
    replica = _replica_index()
    if replica is None or rate == 0 or seed is None:
        return keras.random.dropout(inputs, rate, noise_shape=noise_shape, seed=seed)
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


@keras.saving.register_keras_serializable(package="keras_attention")
class ReplicaDropout(keras.layers.Dropout):
    """`keras.layers.Dropout` that draws a different mask on each replica of a `tf.distribute`
    strategy (Keras's draws the same one on all of them). Same arguments and config.

    Example:

    >>> layer = ReplicaDropout(0.1)
    >>> outputs = layer(inputs, training=True)
    """

    def call(self, inputs, training=False):
        if training and self.rate > 0:
            return dropout(inputs, self.rate, self.seed_generator, self.noise_shape)
        return inputs
