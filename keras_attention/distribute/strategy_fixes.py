"""What a model trained under a `tf.distribute` strategy needs beyond Keras, applied to that
model only: `enable_strategy_fixes`.

A plain `keras.Model` (the `Transformer` included) carries none of it, so the workarounds act
only where a run or a user trains under a strategy that needs them:

- several replicas: each replica draws its own dropout masks (`replica_dropout`);
- several workers: `fit` and `evaluate` work around Keras 3's multi-worker bugs
  (`multi_worker`).
"""

import keras

from keras_attention.distribute.multi_worker import enable_multi_worker_fit, in_multi_worker_mode
from keras_attention.distribute.replica_dropout import enable_replica_dropout


def enable_strategy_fixes(model: keras.Model, strategy=None) -> keras.Model:
    """Readies a built model for `fit` under `strategy`: per-replica dropout masks when the
    strategy has several replicas, and the multi-worker `fit` fix when it spans several
    workers. On one device, and under the JAX and PyTorch backends, the model is left as it is.

    Only this instance changes: its class, config and saved files stay those of a plain model.
    Call it after the model is built (inside `strategy.scope()` or after), before `fit`.

    Args:
        model: a built Keras model.
        strategy: the `tf.distribute.Strategy` it trains under; `None` takes the model's
            (the strategy whose scope it was made in).

    Returns:
        The same model.

    Raises:
        TypeError: if `model` is not a `keras.Model`.
        ValueError: if `model` is not built yet.

    Example:

    >>> from keras_attention import Transformer
    >>> from keras_attention.distribute import get_strategy
    >>> strategy = get_strategy()  # several GPUs, or a TF_CONFIG cluster: fixes apply
    >>> with strategy.scope():
    ...     model = Transformer.from_preset("tiny", vocabulary_size=1000)
    ...     model.build()
    >>> model = enable_strategy_fixes(model, strategy)  # one CPU: nothing to fix
    >>> type(model).__name__, strategy.num_replicas_in_sync
    ('Transformer', 1)
    """
    if not isinstance(model, keras.Model):
        raise TypeError(f"expected a keras.Model; got {type(model).__name__}")
    if not model.built:
        raise ValueError(
            f"enable_strategy_fixes needs a built model; {model.name!r} is not built yet "
            "(call model.build(), or call it on a batch, first)"
        )
    if keras.backend.backend() != "tensorflow":
        return model
    strategy = strategy or model.distribute_strategy
    if strategy.num_replicas_in_sync > 1:
        enable_replica_dropout(model)
    if in_multi_worker_mode(strategy):
        enable_multi_worker_fit(model)
    return model
