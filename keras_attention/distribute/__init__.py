"""Everything multi-device and multi-worker, in one place.

- `strategy`: `get_strategy`, the `tf.distribute` strategy of this process;
- `cluster`: a `TF_CONFIG` cluster (who is chief, the multi-worker strategy, barriers);
- `local_cluster`: a launcher that runs one program as several local workers;
- `multi_worker`: the fix that lets `keras.Model.fit` train under a multi-worker strategy;
- `replicas`: sums over replicas and per-replica dropout seeds;
- `backup`: `BackupAndRestore` for several workers, and every N steps.

It uses only `keras_attention.core`; the layers, the data pipeline, the training and the
models use it. Importing the package loads nothing more: the layers import `replicas` under
any backend, while `strategy` and `cluster` need TensorFlow.
"""

from keras_attention.core.lazy_names import lazy_names

# `from keras_attention.distribute import get_strategy` imports `strategy` then: imported with
# the package, it would load TensorFlow into every `import keras_attention` under JAX or
# PyTorch (7.5-8.4 s more, measured), since the layers import `distribute.replicas`.
__getattr__, __dir__, __all__ = lazy_names(__name__, strategy=["get_strategy"])
