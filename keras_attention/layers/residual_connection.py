"""The residual sub-layer connection of Section 3.1: `LayerNorm(x + Dropout(Sublayer(x)))`."""

from collections.abc import Callable

import keras
from keras import ops


class ResidualConnection:
    """Wraps one sub-layer with dropout, a residual connection and layer normalisation.

    Post-LN, the paper's form: `LayerNorm(x + Dropout(Sublayer(x)))`. Pre-LN
    (`norm_first=True`): `x + Dropout(Sublayer(LayerNorm(x)))`.

    A plain object, not a layer: the normalisation and dropout layers it uses stay
    attributes of the block (`self_attention_norm`, ...), so the weights keep their paths.

    Args:
        norm: the sub-layer's `LayerNormalization`.
        dropout: the residual dropout layer.
        norm_first: pre-LN (`True`) or post-LN (`False`).

    Call arguments:
        x: the sub-layer connection's input.
        sublayer: a callable of the sub-layer's input; it returns the sub-layer's output,
            or a tuple of it and extra outputs (an attention layer's cache and scores).
        training: whether dropout is active.

    Returns:
        The connection's output; with a sub-layer that returns a tuple, the tuple with its
        first element replaced by the connection's output.

    Example:

    >>> norm, dropout = keras.layers.LayerNormalization(), keras.layers.Dropout(0.1)
    >>> feed_forward = keras.layers.Dense(32)
    >>> connection = ResidualConnection(norm, dropout, norm_first=False)
    >>> keras.ops.shape(connection(np.ones((2, 5, 32), "float32"), feed_forward))
    (2, 5, 32)
    """

    def __init__(
        self,
        norm: keras.layers.Layer,
        dropout: keras.layers.Layer,
        norm_first: bool,
    ):
        self.norm = norm
        self.dropout = dropout
        self.norm_first = norm_first

    def __call__(self, x, sublayer: Callable, training=None):
        result = sublayer(self.norm(x) if self.norm_first else x)
        extras = ()
        if isinstance(result, tuple):
            result, *extras = result
        out = ops.add(x, self.dropout(result, training=training))
        if not self.norm_first:
            out = self.norm(out)
        return (out, *extras) if extras else out
