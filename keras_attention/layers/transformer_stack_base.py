"""What the encoder and decoder stacks share: `num_layers` blocks and pre-LN's final norm."""

from keras_attention.core.checks import check_positive_int
from keras_attention.layers.block_arguments import BlockArguments
from keras_attention.layers.initializers import clone_initializer


class TransformerStackBase(BlockArguments):
    """Base of `TransformerEncoder` and `TransformerDecoder`: a stack of `num_layers` blocks.

    Takes every argument of the blocks (see `BlockArguments`) plus `num_layers`.
    With `norm_first=True` (pre-LN) the stack ends with a layer normalisation, since the
    blocks then leave their output un-normalised.
    """

    block_class = None  # set by subclasses

    def __init__(self, num_layers: int, num_heads: int, intermediate_dim: int, **kwargs):
        super().__init__(num_heads, intermediate_dim, **kwargs)
        check_positive_int("num_layers", num_layers)
        self.num_layers = num_layers

    def _build_blocks(self, *shapes) -> None:
        self.blocks = []
        for index in range(self.num_layers):
            block = self.block_class(
                num_heads=self.num_heads,
                intermediate_dim=self.intermediate_dim,
                dropout=self.dropout,
                attention_dropout=self.attention_dropout,
                activation_dropout=self.activation_dropout,
                activation=self.activation,
                norm_first=self.norm_first,
                layer_norm_epsilon=self.layer_norm_epsilon,
                kernel_initializer=clone_initializer(self.kernel_initializer, f"block_{index}"),
                bias_initializer=clone_initializer(self.bias_initializer, f"block_{index}"),
                dtype=self.dtype_policy,
                name=f"block_{index}",
            )
            block.build(*shapes)
            self.blocks.append(block)
        self.final_norm = None
        if self.norm_first:
            self.final_norm = self._make_norm("final_norm", shapes[0])

    def _finish(self, x):
        """Applies pre-LN's final layer normalisation."""
        return x if self.final_norm is None else self.final_norm(x)

    def get_config(self):
        config = super().get_config()
        config.update({"num_layers": self.num_layers})
        return config
