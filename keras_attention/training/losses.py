"""Label-smoothed cross-entropy over real (non-padding) tokens (Section 5.4).

Our own: `keras.losses.SparseCategoricalCrossentropy` has no label smoothing, the categorical
one needs one-hot targets of the vocabulary's size, and neither divides by the target tokens
of the whole global batch, which `MirroredStrategy` needs for the paper's per-token loss.
"""

import keras
from keras import ops

from keras_attention.core.checks import check_rate
from keras_attention.distribute.replicas import global_sum


@keras.saving.register_keras_serializable(package="keras_attention")
class LabelSmoothedCrossEntropy(keras.losses.Loss):
    """Sparse cross-entropy with label smoothing that ignores padding, Section 5.4.

    The target distribution is `(1 - label_smoothing)` on the true token plus
    `label_smoothing / vocabulary_size` on every token (Szegedy et al., 2016). The loss is the
    mean over the real target tokens of the whole global batch: under `tf.distribute`, each
    replica divides its sum by the token count of all replicas, so a step over a batch split
    across replicas equals a step over the same batch on one device.

    Args:
        label_smoothing: the paper's `epsilon_ls` (0.1).
        pad_id: the target id that is ignored.
        name: name of the loss.
        **kwargs: other `keras.losses.Loss` arguments except `reduction`.

    Call arguments:
        y_true: int `(batch, T)` target ids (`pad_id` where there is no token).
        y_pred: logits `(batch, T, vocabulary_size)`.

    Returns:
        A scalar: the mean label-smoothed cross-entropy per real token.

    Example:

    >>> loss = LabelSmoothedCrossEntropy(label_smoothing=0.1)
    >>> logits = np.zeros((1, 2, 10))  # a uniform prediction over 10 tokens
    >>> round(float(loss(np.array([[3, 0]]), logits)), 4)  # ln(10); the padding (0) is ignored
    2.3026
    """

    def __init__(
        self,
        label_smoothing: float = 0.1,
        pad_id: int = 0,
        name: str = "label_smoothed_cross_entropy",
        **kwargs,
    ):
        kwargs.pop("reduction", None)
        super().__init__(name=name, reduction="sum", **kwargs)
        check_rate("label_smoothing", label_smoothing)
        self.label_smoothing = label_smoothing
        self.pad_id = pad_id

    def call(self, y_true, y_pred):
        y_true = ops.cast(y_true, "int32")
        log_probs = ops.log_softmax(ops.cast(y_pred, "float32"), axis=-1)  # (B, T, V)
        nll = -ops.squeeze(ops.take_along_axis(log_probs, y_true[..., None], axis=-1), -1)
        smooth = -ops.mean(log_probs, axis=-1)  # (B, T)
        per_token = (1.0 - self.label_smoothing) * nll + self.label_smoothing * smooth
        real = ops.cast(ops.not_equal(y_true, self.pad_id), "float32")  # (B, T)
        # Keras sums the replicas' gradients and does not rescale a "sum"-reduced loss, so
        # each replica divides its sum by the token count of the whole global batch: the
        # sum over replicas is then the global token mean.
        scale = 1.0 / ops.maximum(global_sum(ops.sum(real)), 1.0)
        return per_token * real * scale  # (B, T); summed by the "sum" reduction

    def get_config(self):
        config = super().get_config()
        config.pop("reduction", None)
        config.update({"label_smoothing": self.label_smoothing, "pad_id": self.pad_id})
        return config
