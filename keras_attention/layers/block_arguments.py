"""The arguments shared by the Transformer's blocks and stacks (Section 3.1), and the
sub-layers and blocks they make."""

import keras

from keras_attention.core.checks import check_positive_float, check_positive_int, check_rate
from keras_attention.layers.initializers import clone_initializer
from keras_attention.layers.multi_head_attention import MultiHeadAttention
from keras_attention.layers.positionwise_feed_forward import PositionwiseFeedForward


class BlockArguments(keras.layers.Layer):
    """Base of the blocks and the stacks: their shared arguments, checked and serialized.

    Only arguments, and the sub-layers made from them, named by the caller and built
    (`_attention`, `_feed_forward`, `_norm`, `_dropout`; a stack's `_blocks`): what a block
    or a stack computes, and the order of its sub-layers, is in its own file. The arguments are
    keyword-only, so that `TransformerEncoderBlock(8, 4)` cannot mean `num_heads=8` here and
    `intermediate_dim=8` to a keras-hub user (`keras_hub.layers.TransformerEncoder`'s order).

    Args:
        num_heads: number of attention heads.
        key_dim: size of each head's queries, keys and values (`d_k = d_v`); defaults to
            `d_model // num_heads`, the paper's constant computation (Table 3, row A). A
            smaller one is Table 3's row B.
        attention_scale: multiplier of the attention logits; defaults to the paper's
            `1 / sqrt(d_k)` (Section 3.2.1); `1.0` is unscaled dot-product attention.
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
        *,
        num_heads: int,
        intermediate_dim: int,
        key_dim: int | None = None,
        attention_scale: float | None = None,
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
        check_positive_int("key_dim", key_dim, allow_none=True)
        if attention_scale is not None:
            check_positive_float("attention_scale", attention_scale)
        check_rate("dropout", dropout)
        check_rate("attention_dropout", attention_dropout)
        check_rate("activation_dropout", activation_dropout)
        check_positive_float("layer_norm_epsilon", layer_norm_epsilon)
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.key_dim = key_dim
        self.attention_scale = attention_scale
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.activation_dropout = activation_dropout
        self.activation = keras.activations.get(activation)
        self.norm_first = norm_first
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def block_arguments(self) -> dict:
        """The shared arguments as objects (what a stack gives each of its blocks).

        Nothing is serialized here: Keras's serializer imports TensorFlow to check
        for its types, and building a model on JAX or PyTorch must not.
        """
        return {
            "num_heads": self.num_heads,
            "intermediate_dim": self.intermediate_dim,
            "key_dim": self.key_dim,
            "attention_scale": self.attention_scale,
            "dropout": self.dropout,
            "attention_dropout": self.attention_dropout,
            "activation_dropout": self.activation_dropout,
            "activation": self.activation,
            "norm_first": self.norm_first,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "kernel_initializer": self.kernel_initializer,
            "bias_initializer": self.bias_initializer,
        }

    def _attention(self, name: str, query_shape, value_shape) -> MultiHeadAttention:
        """A built multi-head attention sub-layer named `name` (Section 3.2.2)."""
        d_model = query_shape[-1]
        if self.key_dim is None and d_model % self.num_heads:
            raise ValueError(
                "num_heads must divide d_model when key_dim is not given; got "
                f"num_heads={self.num_heads}, d_model={d_model}"
            )
        attention = MultiHeadAttention(
            self.num_heads,
            key_dim=self.key_dim,
            scale=self.attention_scale,
            dropout=self.attention_dropout,
            kernel_initializer=clone_initializer(self.kernel_initializer, name),
            bias_initializer=clone_initializer(self.bias_initializer, name),
            dtype=self.dtype_policy,
            name=name,
        )
        attention.build(query_shape, value_shape)
        return attention

    def _feed_forward(self, name: str, shape) -> PositionwiseFeedForward:
        """A built position-wise feed-forward sub-layer named `name` (Section 3.3)."""
        feed_forward = PositionwiseFeedForward(
            self.intermediate_dim,
            dropout=self.activation_dropout,
            activation=self.activation,
            kernel_initializer=clone_initializer(self.kernel_initializer, name),
            bias_initializer=clone_initializer(self.bias_initializer, name),
            dtype=self.dtype_policy,
            name=name,
        )
        feed_forward.build(shape)
        return feed_forward

    def _norm(self, name: str, shape) -> keras.layers.LayerNormalization:
        """A built layer normalisation named `name`."""
        norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name=name
        )
        norm.build(shape)
        return norm

    def _dropout(self, name: str) -> keras.layers.Dropout:
        """The residual dropout (`P_drop`) of one sub-layer's output, named `name`."""
        return keras.layers.Dropout(self.dropout, dtype=self.dtype_policy, name=name)

    def _blocks(self, block_class: type, num_layers: int, *input_shapes) -> list:
        """A stack's `num_layers` blocks of `block_class`, `block_0`, `block_1`, ..., built
        for `input_shapes`, each given these arguments and its own initializers (a seeded
        one salted with the block's name, so that the blocks start from different weights)."""
        blocks = []
        for index in range(num_layers):
            name = f"block_{index}"
            arguments = {
                **self.block_arguments(),
                "kernel_initializer": clone_initializer(self.kernel_initializer, name),
                "bias_initializer": clone_initializer(self.bias_initializer, name),
            }
            block = block_class(**arguments, dtype=self.dtype_policy, name=name)
            block.build(*input_shapes)
            blocks.append(block)
        return blocks

    def compute_output_shape(self, *shapes, **named_shapes):
        first = shapes[0] if shapes else next(iter(named_shapes.values()))
        return tuple(first)

    def get_config(self):
        return {
            **super().get_config(),
            **self.block_arguments(),
            "activation": keras.activations.serialize(self.activation),
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "bias_initializer": keras.initializers.serialize(self.bias_initializer),
        }
