"""Token embedding plus positional encoding, sinusoidal or learned (Sections 3.4 and 3.5)."""

import math

import keras
from keras import ops

from keras_attention.core.checks import check_positive_float, check_positive_int, check_rate
from keras_attention.layers.initializers import clone_initializer
from keras_attention.layers.learned_positional_encoding import LearnedPositionalEncoding
from keras_attention.layers.sinusoidal_positional_encoding import SinusoidalPositionalEncoding


@keras.saving.register_keras_serializable(package="keras_attention")
class PositionalEmbedding(keras.layers.Layer):
    """Embeddings scaled by sqrt(d_model) plus positional encoding, Sections 3.4 and 3.5.

    `Dropout(E[x] * sqrt(d_model) + PE)`. The token embedding is a
    `keras.layers.ReversibleEmbedding`, so the same matrix can serve as the pre-softmax
    projection (`reverse=True`), which shares the weights as in Section 3.4.

    Args:
        vocabulary_size: number of token ids.
        d_model: embedding size.
        dropout: dropout rate on the sum (the paper's `P_drop` on the embeddings).
        mask_zero: whether id 0 is padding; the output then carries a Keras mask.
        max_wavelength: base of the sinusoidal encoding's wavelengths.
        tie_weights: whether `reverse=True` uses the transposed embedding matrix (`True`)
            or a separate output matrix.
        scale_embeddings: multiply the embeddings by `sqrt(d_model)` as in the paper.
        max_positions: `None` for the paper's sinusoids; a number for learned positional
            embeddings of that many positions instead (`LearnedPositionalEncoding`, Table 3's
            row E).
        embeddings_initializer: initializer of the embedding matrix; defaults to
            `RandomNormal(stddev=d_model ** -0.5)` so that scaled embeddings have unit scale.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: integer ids `(batch, seq_len)`, or hidden states `(batch, seq_len, d_model)`
            when `reverse=True`.
        start_index: position of the first token (for decoding one position at a time).
        reverse: project hidden states to vocabulary logits with the (tied) matrix.
        training: whether dropout is active.

    Returns:
        `(batch, seq_len, d_model)` embeddings, or `(batch, seq_len, vocabulary_size)` logits
        when `reverse=True`.

    Example:

    >>> embed = PositionalEmbedding(vocabulary_size=100, d_model=16)
    >>> ids = np.array([[5, 7, 0]])
    >>> hidden = embed(ids)
    >>> keras.ops.shape(hidden), keras.ops.convert_to_numpy(embed.compute_mask(ids))
    ((1, 3, 16), array([[ True,  True, False]]))
    >>> keras.ops.shape(embed(hidden, reverse=True))  # logits over the vocabulary
    (1, 3, 100)
    """

    def __init__(
        self,
        vocabulary_size: int,
        d_model: int,
        dropout: float = 0.0,
        mask_zero: bool = True,
        max_wavelength: float = 10000.0,
        tie_weights: bool = True,
        scale_embeddings: bool = True,
        embeddings_initializer=None,
        max_positions: int | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("vocabulary_size", vocabulary_size)
        check_positive_int("d_model", d_model)
        check_rate("dropout", dropout)
        check_positive_float("max_wavelength", max_wavelength)
        check_positive_int("max_positions", max_positions, allow_none=True)
        self.vocabulary_size = vocabulary_size
        self.d_model = d_model
        self.dropout = dropout
        self.mask_zero = mask_zero
        self.max_wavelength = max_wavelength
        self.tie_weights = tie_weights
        self.scale_embeddings = scale_embeddings
        self.max_positions = max_positions
        if embeddings_initializer is None:
            embeddings_initializer = keras.initializers.RandomNormal(stddev=d_model**-0.5)
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)
        self.token_embedding = keras.layers.ReversibleEmbedding(
            vocabulary_size,
            d_model,
            tie_weights=tie_weights,
            embeddings_initializer=clone_initializer(self.embeddings_initializer),
            mask_zero=mask_zero,
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        self.position_encoding = (
            SinusoidalPositionalEncoding(
                max_wavelength, dtype=self.dtype_policy, name="position_encoding"
            )
            if max_positions is None
            else LearnedPositionalEncoding(
                max_positions, dtype=self.dtype_policy, name="position_encoding"
            )
        )
        self.embedding_dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy)
        self.supports_masking = True

    def build(self, input_shape):
        self.token_embedding.build(input_shape)
        self.position_encoding.build((*tuple(input_shape), self.d_model))

    @property
    def embeddings(self):
        """The `(vocabulary_size, d_model)` embedding matrix."""
        return self.token_embedding.embeddings

    def call(self, inputs, start_index=0, reverse: bool = False, training=None):
        if reverse:
            logits = self.token_embedding(inputs, reverse=True)  # (B, T, V)
            return ops.cast(logits, self.compute_dtype)
        hidden = self.token_embedding(inputs)  # (B, T, D)
        if self.scale_embeddings:
            hidden = hidden * ops.cast(math.sqrt(self.d_model), hidden.dtype)
        hidden = hidden + self.position_encoding(hidden, start_index=start_index)
        return self.embedding_dropout(hidden, training=training)  # (B, T, D)

    def compute_mask(self, inputs, mask=None):
        if not keras.backend.is_int_dtype(inputs.dtype):  # reverse=True: hidden states in
            return mask
        if not self.mask_zero:
            return None
        return ops.not_equal(inputs, 0)

    def compute_output_shape(self, input_shape):
        return (*tuple(input_shape), self.d_model)

    def compute_output_spec(self, inputs, start_index=0, reverse: bool = False, training=None):
        if reverse:
            shape = (*tuple(inputs.shape[:-1]), self.vocabulary_size)
        else:
            shape = self.compute_output_shape(inputs.shape)
        return keras.KerasTensor(shape, dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "d_model": self.d_model,
                "dropout": self.dropout,
                "mask_zero": self.mask_zero,
                "max_wavelength": self.max_wavelength,
                "tie_weights": self.tie_weights,
                "scale_embeddings": self.scale_embeddings,
                "max_positions": self.max_positions,
                "embeddings_initializer": keras.initializers.serialize(self.embeddings_initializer),
            }
        )
        return config
