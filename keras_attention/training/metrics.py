"""Metrics over real (non-padding) target tokens: accuracy and perplexity.

Our own rather than keras's or keras-hub's: `keras.metrics.SparseCategoricalAccuracy` counts
padding unless every caller builds a mask, and keras-hub's `Perplexity`, which gives the same
numbers (`tests/system/test_keras_hub_parity.py`), would load TensorFlow and tensorflow-text on
import under any backend, while training runs under JAX and PyTorch too.
"""

import keras
from keras import ops


class _MaskedTokenMetric(keras.metrics.Metric):
    """Accumulates a per-token value over real tokens: `total / count`."""

    def __init__(self, pad_id: int = 0, name: str | None = None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pad_id = pad_id
        self.total = self.add_variable((), initializer="zeros", name="total")
        self.count = self.add_variable((), initializer="zeros", name="count")

    def per_token(self, y_true, y_pred):
        raise NotImplementedError

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(y_true, "int32")
        real = ops.cast(ops.not_equal(y_true, self.pad_id), "float32")  # (B, T)
        if sample_weight is not None:
            sample_weight = ops.cast(sample_weight, "float32")
            # A weight per sequence `(B,)` (as `fit(sample_weight=...)` gives) weighs its tokens.
            while len(sample_weight.shape) < len(real.shape):
                sample_weight = ops.expand_dims(sample_weight, -1)
            real = real * sample_weight  # (B, T)
        values = self.per_token(y_true, ops.cast(y_pred, "float32"))  # (B, T)
        self.total.assign_add(ops.sum(values * real))
        self.count.assign_add(ops.sum(real))

    def result(self):
        return ops.divide_no_nan(self.total, self.count)

    def reset_state(self):
        self.total.assign(0.0)
        self.count.assign(0.0)

    def get_config(self):
        return {**super().get_config(), "pad_id": self.pad_id}


@keras.saving.register_keras_serializable(package="keras_attention")
class MaskedAccuracy(_MaskedTokenMetric):
    """Fraction of real target tokens whose arg-max prediction is right.

    Args:
        pad_id: the target id that is ignored.
        name: metric name.

    Example:

    >>> metric = MaskedAccuracy()
    >>> metric.update_state(np.array([[2, 0]]), np.eye(3)[None, [2, 1]])
    >>> float(metric.result())
    1.0
    """

    def __init__(self, pad_id: int = 0, name: str = "accuracy", **kwargs):
        super().__init__(pad_id=pad_id, name=name, **kwargs)

    def per_token(self, y_true, y_pred):
        predicted = ops.cast(ops.argmax(y_pred, axis=-1), "int32")
        return ops.cast(ops.equal(predicted, y_true), "float32")


@keras.saving.register_keras_serializable(package="keras_attention")
class Perplexity(_MaskedTokenMetric):
    """`exp` of the mean (unsmoothed) cross-entropy per real target token.

    Args:
        pad_id: the target id that is ignored.
        name: metric name.
    """

    def __init__(self, pad_id: int = 0, name: str = "perplexity", **kwargs):
        super().__init__(pad_id=pad_id, name=name, **kwargs)

    def per_token(self, y_true, y_pred):
        log_probs = ops.log_softmax(y_pred, axis=-1)
        return -ops.squeeze(ops.take_along_axis(log_probs, y_true[..., None], axis=-1), -1)

    def result(self):
        return ops.exp(super().result())
