"""Learned positional embeddings, the variation of Table 3's row (E)."""

import keras
from keras import ops

from keras_attention.core.checks import check_positive_int


@keras.saving.register_keras_serializable(package="keras_attention")
class LearnedPositionalEncoding(keras.layers.Layer):
    """A trained vector per position, the paper's alternative to sinusoids (Section 3.5).

    The paper "also experimented with using learned positional embeddings instead, and found
    that the two versions produced nearly identical results" (Table 3, row E). This layer is a
    `(max_positions, d_model)` weight whose rows are the positions; it has the call signature
    of `SinusoidalPositionalEncoding`, so that `PositionalEmbedding` takes either. Unlike
    sinusoids it cannot go past the positions it was trained on: a position at or beyond
    `max_positions` gets the last row (keep `max_positions` above the longest output a search
    may write, the source length plus its extra length).

    Args:
        max_positions: how many positions have a vector.
        initializer: initializer of the vectors; defaults to `RandomNormal(stddev=d_model **
            -0.5)`, the scale of the token embeddings before they are scaled by
            `sqrt(d_model)` (fairseq's choice for its learned positions).
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: `(batch, seq_len, d_model)`; only its shape is used.
        start_index: position of the first element (int or scalar tensor), e.g. the
            current step when decoding one position at a time.

    Returns:
        The position vectors, broadcast to the shape of `inputs`, in the layer's compute dtype;
        the Keras mask of `inputs` is passed on.

    Example:

    >>> positions = LearnedPositionalEncoding(max_positions=32)
    >>> x = np.zeros((2, 10, 16), "float32")
    >>> keras.ops.shape(positions(x)), keras.ops.shape(positions.embeddings)
    ((2, 10, 16), (32, 16))
    """

    def __init__(self, max_positions: int, initializer=None, **kwargs):
        super().__init__(**kwargs)
        check_positive_int("max_positions", max_positions)
        self.max_positions = max_positions
        self.initializer = None if initializer is None else keras.initializers.get(initializer)
        self.supports_masking = True  # per-position output: the input's Keras mask still applies

    def build(self, input_shape):
        d_model = input_shape[-1]
        initializer = self.initializer or keras.initializers.RandomNormal(stddev=d_model**-0.5)
        self.embeddings = self.add_weight(
            shape=(self.max_positions, d_model), initializer=initializer, name="embeddings"
        )

    def call(self, inputs, start_index=0):
        shape = ops.shape(inputs)
        positions = ops.arange(shape[-2], dtype="int32") + ops.cast(start_index, "int32")
        positions = ops.minimum(positions, self.max_positions - 1)
        encoding = ops.take(self.embeddings, positions, axis=0)  # (T, D)
        return ops.broadcast_to(ops.cast(encoding, self.compute_dtype), shape)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        initializer = (
            None if self.initializer is None else keras.initializers.serialize(self.initializer)
        )
        config.update({"max_positions": self.max_positions, "initializer": initializer})
        return config
