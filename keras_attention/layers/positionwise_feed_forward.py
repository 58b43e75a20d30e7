"""Position-wise feed-forward network (Section 3.3)."""

import keras

from keras_attention.core.checks import check_positive_int, check_rate
from keras_attention.layers.initializers import clone_initializer


@keras.saving.register_keras_serializable(package="keras_attention")
class PositionwiseFeedForward(keras.layers.Layer):
    """Position-wise feed-forward network, Section 3.3 (Equation 2).

    `FFN(x) = max(0, x W_1 + b_1) W_2 + b_2`, applied to each position separately and
    identically, with optional dropout on the inner activation (tensor2tensor's
    "relu dropout").

    Args:
        intermediate_dim: inner size `d_ff` (2048 in the base model).
        dropout: dropout rate on the inner activation.
        activation: inner activation, `"relu"` in the paper.
        output_dim: output size; defaults to the input's last dimension (`d_model`).
        use_bias: whether the two dense layers have biases.
        kernel_initializer: initializer of both kernels.
        bias_initializer: initializer of both biases.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: `(..., d_model)`.
        training: whether dropout is active.

    Returns:
        `(..., output_dim)`; the Keras mask of `inputs` is passed on.

    Example:

    >>> ffn = PositionwiseFeedForward(intermediate_dim=64)
    >>> keras.ops.shape(ffn(np.zeros((2, 5, 16), "float32")))
    (2, 5, 16)
    """

    def __init__(
        self,
        intermediate_dim: int,
        dropout: float = 0.0,
        activation="relu",
        output_dim: int | None = None,
        use_bias: bool = True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("intermediate_dim", intermediate_dim)
        check_positive_int("output_dim", output_dim, allow_none=True)
        check_rate("dropout", dropout)
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.activation = keras.activations.get(activation)
        self.output_dim = output_dim
        self.use_bias = use_bias
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def _dense(self, units: int, activation, name: str):
        return keras.layers.Dense(
            units,
            activation=activation,
            use_bias=self.use_bias,
            kernel_initializer=clone_initializer(self.kernel_initializer, name),
            bias_initializer=clone_initializer(self.bias_initializer, name),
            dtype=self.dtype_policy,
            name=name,
        )

    def build(self, input_shape):
        output_dim = self.output_dim or input_shape[-1]
        self.inner_dense = self._dense(self.intermediate_dim, self.activation, "inner")
        self.inner_dropout = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)
        self.output_dense = self._dense(output_dim, None, "output")
        self.inner_dense.build(input_shape)
        self.output_dense.build((*tuple(input_shape[:-1]), self.intermediate_dim))

    def call(self, inputs, training=None):
        hidden = self.inner_dense(inputs)  # (..., d_ff)
        hidden = self.inner_dropout(hidden, training=training)
        return self.output_dense(hidden)  # (..., d_model)

    def compute_output_shape(self, input_shape):
        return (*tuple(input_shape[:-1]), self.output_dim or input_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "intermediate_dim": self.intermediate_dim,
                "dropout": self.dropout,
                "activation": keras.activations.serialize(self.activation),
                "output_dim": self.output_dim,
                "use_bias": self.use_bias,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config
