"""What the encoder and decoder blocks share: arguments, sub-layers and the residual rule."""

import keras

from keras_attention.core.checks import check_positive_float, check_positive_int, check_rate
from keras_attention.layers.initializers import clone_initializer
from keras_attention.layers.multi_head_attention import MultiHeadAttention
from keras_attention.layers.positionwise_feed_forward import PositionwiseFeedForward
from keras_attention.layers.replica_dropout import ReplicaDropout


class TransformerBlockBase(keras.layers.Layer):
    """Base of `TransformerEncoderBlock` and `TransformerDecoderBlock` (Section 3.1).

    Each sub-layer is wrapped as `LayerNorm(x + Dropout(Sublayer(x)))` (post-LN, the
    paper) or `x + Dropout(Sublayer(LayerNorm(x)))` (pre-LN, `norm_first=True`).

    Args:
        num_heads: number of attention heads.
        intermediate_dim: inner size of the feed-forward network (`d_ff`).
        dropout: residual dropout on each sub-layer's output (the paper's `P_drop`).
        attention_dropout: dropout on the attention weights.
        activation_dropout: dropout on the feed-forward network's inner activation.
        activation: the feed-forward network's activation.
        norm_first: pre-LN (`True`) instead of the paper's post-LN (`False`).
        layer_norm_epsilon: epsilon of the layer normalisations.
        kernel_initializer: initializer of every kernel.
        bias_initializer: initializer of every bias.
        **kwargs: standard `keras.layers.Layer` arguments.
    """

    def __init__(
        self,
        num_heads: int,
        intermediate_dim: int,
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        activation_dropout: float = 0.0,
        activation="relu",
        norm_first: bool = False,
        layer_norm_epsilon: float = 1e-6,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("num_heads", num_heads)
        check_positive_int("intermediate_dim", intermediate_dim)
        check_rate("dropout", dropout)
        check_rate("attention_dropout", attention_dropout)
        check_rate("activation_dropout", activation_dropout)
        check_positive_float("layer_norm_epsilon", layer_norm_epsilon)
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.activation_dropout = activation_dropout
        self.activation = keras.activations.get(activation)
        self.norm_first = norm_first
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def _check_d_model(self, d_model: int) -> None:
        if d_model % self.num_heads:
            raise ValueError(
                f"num_heads must divide d_model; got num_heads={self.num_heads}, d_model={d_model}"
            )

    def _make_attention(self, name: str) -> MultiHeadAttention:
        return MultiHeadAttention(
            self.num_heads,
            dropout=self.attention_dropout,
            kernel_initializer=clone_initializer(self.kernel_initializer, name),
            bias_initializer=clone_initializer(self.bias_initializer, name),
            dtype=self.dtype_policy,
            name=name,
        )

    def _make_feed_forward(self) -> PositionwiseFeedForward:
        return PositionwiseFeedForward(
            self.intermediate_dim,
            dropout=self.activation_dropout,
            activation=self.activation,
            kernel_initializer=clone_initializer(self.kernel_initializer, "feed_forward"),
            bias_initializer=clone_initializer(self.bias_initializer, "feed_forward"),
            dtype=self.dtype_policy,
            name="feed_forward",
        )

    def _make_norm(self, name: str) -> keras.layers.LayerNormalization:
        return keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name=name
        )

    def _make_dropout(self, name: str) -> keras.layers.Dropout:
        return ReplicaDropout(self.dropout, dtype=self.dtype_policy, name=name)

    def _build_attention_sublayer(self, name: str, query_shape, value_shape) -> None:
        """Builds the attention sub-layer `name` with its `{name}_norm` and `{name}_dropout`."""
        attention = self._make_attention(name)
        setattr(self, name, attention)
        attention.build(query_shape, value_shape)
        norm = self._make_norm(f"{name}_norm")
        setattr(self, f"{name}_norm", norm)
        norm.build(query_shape)
        setattr(self, f"{name}_dropout", self._make_dropout(f"{name}_dropout"))

    def _build_feed_forward_sublayer(self, inputs_shape) -> None:
        """Builds `feed_forward` with its `feed_forward_norm` and `feed_forward_dropout`."""
        self.feed_forward = self._make_feed_forward()
        self.feed_forward.build(inputs_shape)
        self.feed_forward_norm = self._make_norm("feed_forward_norm")
        self.feed_forward_norm.build(inputs_shape)
        self.feed_forward_dropout = self._make_dropout("feed_forward_dropout")

    def _sublayer_input(self, x, norm):
        """What a sub-layer sees: `x` (post-LN) or `LayerNorm(x)` (pre-LN)."""
        return norm(x) if self.norm_first else x

    def _residual(self, x, sublayer_output, dropout, norm, training):
        """`x + Dropout(sublayer_output)`, then `LayerNorm` when post-LN."""
        out = x + dropout(sublayer_output, training=training)
        return out if self.norm_first else norm(out)

    def _apply_feed_forward(self, x, training):
        """The feed-forward sub-layer with its dropout, residual connection and norm."""
        transformed = self.feed_forward(
            self._sublayer_input(x, self.feed_forward_norm), training=training
        )
        return self._residual(
            x, transformed, self.feed_forward_dropout, self.feed_forward_norm, training
        )

    def compute_output_shape(self, *shapes, **named_shapes):
        first = shapes[0] if shapes else next(iter(named_shapes.values()))
        return tuple(first)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "intermediate_dim": self.intermediate_dim,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "activation_dropout": self.activation_dropout,
                "activation": keras.activations.serialize(self.activation),
                "norm_first": self.norm_first,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config
