"""What the encoder and decoder blocks share: their sub-layers and residual connections."""

import keras

from keras_attention.layers.block_arguments import BlockArguments
from keras_attention.layers.initializers import clone_initializer
from keras_attention.layers.multi_head_attention import MultiHeadAttention
from keras_attention.layers.positionwise_feed_forward import PositionwiseFeedForward
from keras_attention.layers.residual_connection import ResidualConnection


class TransformerBlockBase(BlockArguments):
    """Base of `TransformerEncoderBlock` and `TransformerDecoderBlock` (Section 3.1).

    Makes the sub-layers, each with its layer normalisation and dropout, and wraps each as
    a `ResidualConnection`: `LayerNorm(x + Dropout(Sublayer(x)))` (post-LN, the paper) or
    `x + Dropout(Sublayer(LayerNorm(x)))` (pre-LN, `norm_first=True`). Takes the arguments
    of `BlockArguments`.
    """

    def _check_d_model(self, d_model: int) -> None:
        if d_model % self.num_heads:
            raise ValueError(
                f"num_heads must divide d_model; got num_heads={self.num_heads}, d_model={d_model}"
            )

    def _make_attention(self, name: str, query_shape, value_shape) -> MultiHeadAttention:
        """A built `MultiHeadAttention` named `name`."""
        attention = MultiHeadAttention(
            self.num_heads,
            dropout=self.attention_dropout,
            kernel_initializer=clone_initializer(self.kernel_initializer, name),
            bias_initializer=clone_initializer(self.bias_initializer, name),
            dtype=self.dtype_policy,
            name=name,
        )
        attention.build(query_shape, value_shape)
        return attention

    def _make_feed_forward(self, inputs_shape) -> PositionwiseFeedForward:
        """The built position-wise feed-forward network, `feed_forward`."""
        feed_forward = PositionwiseFeedForward(
            self.intermediate_dim,
            dropout=self.activation_dropout,
            activation=self.activation,
            kernel_initializer=clone_initializer(self.kernel_initializer, "feed_forward"),
            bias_initializer=clone_initializer(self.bias_initializer, "feed_forward"),
            dtype=self.dtype_policy,
            name="feed_forward",
        )
        feed_forward.build(inputs_shape)
        return feed_forward

    def _make_dropout(self, name: str) -> keras.layers.Dropout:
        """The residual dropout of one sub-layer."""
        return keras.layers.Dropout(self.dropout, dtype=self.dtype_policy, name=name)

    def _connection(self, norm, dropout) -> ResidualConnection:
        """The residual connection around a sub-layer with `norm` and `dropout`."""
        return ResidualConnection(norm, dropout, self.norm_first)
