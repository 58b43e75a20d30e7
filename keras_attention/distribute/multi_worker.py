"""`model.fit` and `evaluate` under `tf.distribute.MultiWorkerMirroredStrategy` with Keras 3.

Keras 3's TensorFlow trainer (3.15 and earlier) fails there with `ValueError: Attempt to
convert a value (PerReplica:{...}) with an unsupported type ... to a Tensor`
(keras-team/keras#20585, tensorflow/tensorflow#72388). Two places in the trainer take the
single-machine path for granted:

1. Before the first step, `fit`/`evaluate` take the first distributed batch and turn it into
   one batch with `strategy.reduce("MEAN", batch)`, only to read its shapes. Across workers
   that reduce is a collective all-reduce of a whole *structure* of per-replica tensors,
   which `CollectiveAllReduce` cannot take: the error above. (Were it to work, it would ship
   the batch over the network and need equal shapes on every worker.) Fixed here by reading
   the shapes from the dataset's element spec, with no communication and no batch drawn.
2. After each step, the trainer reduces the step's logs with
   `strategy.reduce("MEAN", value, axis=0)` across workers, which fails for the scalar
   metrics every step returns ("Invalid reduction dimension 0 for input with 0
   dimensions"). Fixed here by handing the trainer each scalar as a one-element vector, so
   that its reduce averages the replicas' values, as it does on one machine.

Both fixes act only when the strategy really spans several workers: on one device and under
`MirroredStrategy`, Keras's own code runs unchanged. The epoch's logs and `evaluate`'s results
come from the metrics' variables, summed over every replica of every worker: exact global
values.

`enable_multi_worker_fit(model)` applies the fix to one model instance, of any kind (what
`distribute.strategy_fixes.enable_strategy_fixes` does for a run's model under a multi-worker
strategy); `MultiWorkerFitMixin`, as the first base class, builds it into a subclassed model
of one's own. The library's models carry neither: a plain `keras.Model` overrides nothing of
Keras.
"""

import keras


def in_multi_worker_mode(strategy) -> bool:
    """Whether `strategy` is a `MultiWorkerMirroredStrategy` over several workers."""
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return False
    return bool(strategy.extended._in_multi_worker_mode())


def _local_value(strategy, value):
    """This worker's first replica's part of a distributed value; other values unchanged."""
    import tensorflow as tf

    if isinstance(value, tf.distribute.DistributedValues):
        return strategy.experimental_local_results(value)[0]
    return value


def _needs_fix(model) -> bool:
    """Whether `model` trains under a strategy that spans several workers."""
    # Only the TensorFlow trainer has `_distribute_strategy`; JAX's and PyTorch's do not.
    strategy = getattr(model, "_distribute_strategy", None)
    return strategy is not None and in_multi_worker_mode(strategy)


def _build_from_local_batch(model, iterator=None, data_batch=None) -> None:
    """Builds the model from the dataset's element spec (or this worker's part of
    `data_batch`), without a cross-worker reduce and without drawing a batch."""
    strategy = model.distribute_strategy
    if iterator is not None:
        # Shapes and dtypes are all the build needs. Unlike Keras, which draws a first batch
        # with a throw-away iterator, this leaves the dataset's shuffling sequence alone, so a
        # seeded run sees the same batches in the same order as on one device.
        data_batch = iterator.data_adapter.get_tf_dataset().element_spec
    data_batch = keras.tree.map_structure(lambda value: _local_value(strategy, value), data_batch)
    with strategy.scope():
        model._symbolic_build(data_batch=data_batch)


def _vector_scalars(step_function):
    """Wraps a train/test step so that its scalar outputs become one-element vectors."""
    import tensorflow as tf

    def step(data):
        outputs = step_function(data)
        return keras.tree.map_structure(
            lambda value: (
                tf.reshape(value, [1]) if tf.is_tensor(value) and value.shape.rank == 0 else value
            ),
            outputs,
        )

    return step


class MultiWorkerFitMixin:
    """Mixin (first base class) that makes a subclassed Keras model's `fit` and `evaluate`
    work under `MultiWorkerMirroredStrategy` (see the module's docstring for the two Keras
    bugs it works around). Elsewhere it changes nothing.

    Example:

    >>> class Regression(MultiWorkerFitMixin, keras.Model):
    ...     def __init__(self, **kwargs):
    ...         super().__init__(**kwargs)
    ...         self.dense = keras.layers.Dense(1)
    ...
    ...     def call(self, inputs):
    ...         return self.dense(inputs)
    >>> model = Regression()
    >>> model.compile("sgd", "mse")
    >>> history = model.fit(np.ones((8, 3)), np.ones((8, 1)), epochs=2, verbose=0)
    >>> len(history.history["loss"])
    2
    """

    # The other backends' trainers have their own signatures (JAX's `_make_function` takes
    # `concatenate_outputs`), so everything but the multi-worker case passes straight through.
    def _maybe_symbolic_build(self, *args, **kwargs):
        if not _needs_fix(self):
            return super()._maybe_symbolic_build(*args, **kwargs)
        return _build_from_local_batch(self, *args, **kwargs)

    def _make_function(self, step_function, *args, **kwargs):
        if _needs_fix(self):
            step_function = _vector_scalars(step_function)
        return super()._make_function(step_function, *args, **kwargs)


def enable_multi_worker_fit(model: keras.Model) -> keras.Model:
    """Makes `model.fit` and `model.evaluate` work under `MultiWorkerMirroredStrategy`.

    Works for any model: subclassed (the `Transformer`), Sequential, functional or
    third-party. Only this instance changes: its class, its config and its saved files stay
    those of a plain model. Call it inside `strategy.scope()` or after, before `fit`; a
    second call changes nothing.

    Args:
        model: a Keras model on the TensorFlow backend.

    Returns:
        The same model.

    Example:

    >>> from keras_attention.distribute import get_strategy
    >>> strategy = get_strategy()  # on each worker of a TF_CONFIG cluster: multi-worker
    >>> with strategy.scope():
    ...     model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    ...     model.compile("sgd", "mse")
    >>> history = enable_multi_worker_fit(model).fit(np.ones((8, 3)), np.ones((8, 1)), verbose=0)
    >>> len(history.history["loss"])
    1
    """
    if keras.backend.backend() != "tensorflow":
        raise ValueError(
            "enable_multi_worker_fit is for the TensorFlow backend; "
            f"the backend is {keras.backend.backend()!r}"
        )
    if not isinstance(model, keras.Model):
        raise TypeError(f"expected a keras.Model; got {type(model).__name__}")
    if isinstance(model, MultiWorkerFitMixin) or "_make_function" in vars(model):
        return model  # fixed already
    keras_build, keras_make_function = model._maybe_symbolic_build, model._make_function

    def maybe_symbolic_build(iterator=None, data_batch=None):
        if not _needs_fix(model):
            return keras_build(iterator=iterator, data_batch=data_batch)
        return _build_from_local_batch(model, iterator, data_batch)

    def make_function(step_function):
        if _needs_fix(model):
            step_function = _vector_scalars(step_function)
        return keras_make_function(step_function)

    # Plain attributes of this instance (not tracked by Keras): its class stays the same.
    object.__setattr__(model, "_maybe_symbolic_build", maybe_symbolic_build)
    object.__setattr__(model, "_make_function", make_function)
    return model
