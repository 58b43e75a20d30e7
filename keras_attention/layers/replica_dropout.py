"""Dropout whose masks differ between the replicas of a `tf.distribute` strategy.

Keras 3 draws dropout masks from a seed state that `tf.distribute` mirrors: every replica (every
device of a `MirroredStrategy`, every worker of a `MultiWorkerMirroredStrategy`) reads the same
seed and, for equal shapes, drops the same units of its own share of the batch. The examples of
one global batch then share masks in groups of the number of replicas, which one device never
does. Here the replica's index is folded into the seed, so each replica draws its own masks.
Replica 0, one device, and the other backends get exactly Keras's masks.
"""

import keras

from keras_attention.distribute.replicas import replica_dropout


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
    # `None` on one device and on the other backends: Keras's masks there.
    dropped = (
        None if rate == 0 or seed is None else replica_dropout(inputs, rate, seed, noise_shape)
    )
    if dropped is None:
        return keras.random.dropout(inputs, rate, noise_shape=noise_shape, seed=seed)
    return dropped


@keras.saving.register_keras_serializable(package="keras_attention")
class ReplicaDropout(keras.layers.Dropout):
    """`keras.layers.Dropout` that draws a different mask on each replica of a `tf.distribute`
    strategy (Keras's draws the same one on all of them). Same arguments and config.

    Example:

    >>> layer = ReplicaDropout(0.5)
    >>> outputs = keras.ops.convert_to_numpy(layer(np.ones((2, 1000)), training=True))
    >>> np.unique(outputs)  # dropped, or scaled by 1 / (1 - rate)
    array([0., 2.], dtype=float32)
    """

    def call(self, inputs, training=False):
        if training and self.rate > 0:
            return dropout(inputs, self.rate, self.seed_generator, self.noise_shape)
        return inputs
