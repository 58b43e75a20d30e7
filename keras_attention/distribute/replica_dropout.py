"""Dropout masks that differ between the replicas of a `tf.distribute` strategy.

Keras 3 draws dropout masks from a seed state that `tf.distribute` mirrors: every replica (every
device of a `MirroredStrategy`, every worker of a `MultiWorkerMirroredStrategy`) reads the same
seed and, for equal shapes, drops the same units of its own share of the batch. The examples of
one global batch then share masks in groups of the number of replicas, which one device never
does. `enable_replica_dropout(model)` folds the replica's index into the seeds of the model's
random generators, so each replica draws its own masks; the layers stay `keras.layers.Dropout`
(and `keras.random.dropout`), their configs and weights unchanged. Replica 0, one device, and
the other backends get exactly Keras's masks.

`ReplicaDropout`, the layer that did this before the layers became plain Keras, stays
registered so that `.keras` files naming it still load.
"""

import keras

from keras_attention.distribute.replicas import fold_replica_index


class ReplicaSeedGenerator(keras.random.SeedGenerator):
    """`keras.random.SeedGenerator` whose seeds are the replica's own under a strategy with
    several replicas (`replicas.fold_replica_index`); Keras's seeds elsewhere. The state, and
    how it advances, are Keras's: a backup's generator states stay valid."""

    def next(self, ordered=True):
        return fold_replica_index(super().next(ordered=ordered))


def _replica_seeds(generator: keras.random.SeedGenerator) -> None:
    """Makes one of Keras's seed generators a `ReplicaSeedGenerator` (its state is kept)."""
    if type(generator) is keras.random.SeedGenerator:
        generator.__class__ = ReplicaSeedGenerator


def enable_replica_dropout(layer: keras.layers.Layer) -> keras.layers.Layer:
    """Gives each replica of a `tf.distribute` strategy its own dropout masks in `layer`
    (a model, or any layer) and every layer inside it.

    Every `keras.random.SeedGenerator` of those layers (the dropout layers' and the attention
    dropout's) then folds the replica's index into the seeds it hands out. Only these
    instances change: classes, configs and saved files stay Keras's, and on one device or
    another backend the masks are exactly Keras's. Call it once the layer is built (a
    sub-layer made in `build`, such as a feed-forward network's dropout, exists only then),
    before `fit`.

    Args:
        layer: a built Keras layer or model.

    Returns:
        The same layer.

    Raises:
        TypeError: if `layer` is not a Keras layer.
        ValueError: if `layer` is not built yet.

    Example:

    >>> from keras_attention.distribute import get_strategy
    >>> strategy = get_strategy()  # MirroredStrategy where there are several GPUs
    >>> with strategy.scope():
    ...     model = keras.Sequential([keras.Input((8,)), keras.layers.Dropout(0.5)])
    >>> model = enable_replica_dropout(model)
    >>> type(model.layers[0]).__name__  # still Keras's layer; its seeds are the replica's
    'Dropout'
    """
    if not isinstance(layer, keras.layers.Layer):
        raise TypeError(f"expected a Keras layer or model; got {type(layer).__name__}")
    if not layer.built:
        raise ValueError(
            f"enable_replica_dropout needs a built layer; {layer.name!r} is not built yet "
            "(call its build(), or call it on data, first)"
        )
    # `_flatten_layers` and `_seed_generators` are Keras's own lists of a layer's layers and
    # of the generators each holds (the ones `layer.variables` reads the states of).
    for inner in layer._flatten_layers(include_self=True, recursive=True):
        for generator in getattr(inner, "_seed_generators", []):
            _replica_seeds(generator)
    return layer


@keras.saving.register_keras_serializable(package="keras_attention")
class ReplicaDropout(keras.layers.Dropout):
    """`keras.layers.Dropout` that draws a different mask on each replica of a `tf.distribute`
    strategy (Keras's draws the same one on all of them). Same arguments and config.

    The layers now build `keras.layers.Dropout`, made replica-aware by
    `enable_replica_dropout`; this layer is kept so that `.keras` files naming it load.

    Example:

    >>> layer = ReplicaDropout(0.5)
    >>> outputs = keras.ops.convert_to_numpy(layer(np.ones((2, 1000)), training=True))
    >>> np.unique(outputs)  # dropped, or scaled by 1 / (1 - rate)
    array([0., 2.], dtype=float32)
    """

    def __init__(self, rate: float, noise_shape=None, seed: int | None = None, **kwargs):
        super().__init__(rate, noise_shape=noise_shape, seed=seed, **kwargs)
        if rate > 0:
            _replica_seeds(self.seed_generator)
