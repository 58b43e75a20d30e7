"""Everything multi-device and multi-worker, in one place.

- `strategy`: `get_strategy`, the `tf.distribute` strategy of this process;
- `cluster`: a `TF_CONFIG` cluster (who is chief, the multi-worker strategy, barriers);
- `local_cluster`: a launcher that runs one program as several local workers;
- `strategy_fixes`: `enable_strategy_fixes`, what a model trained under a strategy needs
  beyond Keras, applied to that model only (a run calls it on the model it trains);
- `multi_worker`: the fix that lets `keras.Model.fit` train under a multi-worker strategy;
- `replica_dropout`: each replica's own dropout masks (and `ReplicaDropout`, for old files);
- `replicas`: sums over replicas and per-replica seeds;
- `backup`: `BackupAndRestore` for several workers, and every N steps.

It uses only `keras_attention.core`; the training and the runs use it, the layers and the
models do not (they are plain Keras). Importing the package loads nothing more: `replicas`,
`replica_dropout` and `multi_worker` import TensorFlow only inside their functions, while
`strategy` and `cluster` need it.
"""

from keras_attention.core.lazy_names import lazy_names

# `from keras_attention.distribute import get_strategy` imports `strategy` then: imported with
# the package, it would load TensorFlow into every `import keras_attention` under JAX or
# PyTorch (7.5-8.4 s more, measured).
__getattr__, __dir__, __all__ = lazy_names(
    __name__,
    strategy=["get_strategy"],
    strategy_fixes=["enable_strategy_fixes"],
    multi_worker=["enable_multi_worker_fit"],
    replica_dropout=["ReplicaDropout", "enable_replica_dropout"],
)
