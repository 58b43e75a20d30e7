"""The arguments shared by the Transformer's blocks and stacks (Section 3.1)."""

import keras

from keras_attention.core.checks import check_positive_float, check_positive_int, check_rate


class BlockArguments(keras.layers.Layer):
    """Base of the blocks and the stacks: their shared arguments, checked and serialized.

    Only arguments: what a block or a stack computes is in its own file. The arguments are
    keyword-only, so that `TransformerEncoderBlock(8, 4)` cannot mean `num_heads=8` here and
    `intermediate_dim=8` to a keras-hub user (`keras_hub.layers.TransformerEncoder`'s order).

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
        *,
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

    def block_arguments(self) -> dict:
        """The shared arguments as objects (what a stack gives each of its blocks).

        Nothing is serialized here: Keras's serializer imports TensorFlow to check
        for its types, and building a model on JAX or PyTorch must not.
        """
        return {
            "num_heads": self.num_heads,
            "intermediate_dim": self.intermediate_dim,
            "dropout": self.dropout,
            "attention_dropout": self.attention_dropout,
            "activation_dropout": self.activation_dropout,
            "activation": self.activation,
            "norm_first": self.norm_first,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "kernel_initializer": self.kernel_initializer,
            "bias_initializer": self.bias_initializer,
        }

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
