"""The encoder stack of the Transformer (Section 3.1)."""

import keras

from keras_attention import masks
from keras_attention.core.checks import check_positive_int
from keras_attention.layers.block_arguments import BlockArguments
from keras_attention.layers.output_spec import output_spec
from keras_attention.layers.transformer_encoder_block import TransformerEncoderBlock


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerEncoder(BlockArguments):
    """Transformer encoder: a stack of `num_layers` identical encoder blocks, Section 3.1.

    Args (keyword-only):
        num_layers: number of blocks (`N = 6` in the paper).
        num_heads: number of attention heads.
        intermediate_dim: inner size of the feed-forward networks (`d_ff`).
        **kwargs: the other arguments of `TransformerEncoderBlock` (`dropout`,
            `attention_dropout`, `activation_dropout`, `activation`, `norm_first`,
            `layer_norm_epsilon`, initializers) and of `keras.layers.Layer`.

    Call arguments:
        inputs: `(batch, seq_len, d_model)`, typically from `PositionalEmbedding`.
        padding_mask: optional boolean `(batch, seq_len)`; defaults to the Keras mask.
        attention_mask: optional boolean `(batch, seq_len, seq_len)`.
        training: whether dropout is active.
        return_attention_scores: also return a list with each block's self-attention
            weights `(batch, heads, seq_len, seq_len)`.

    Returns:
        `(batch, seq_len, d_model)`, and the list of weights when asked.

    Example:

    >>> encoder = TransformerEncoder(num_layers=2, num_heads=4, intermediate_dim=64)
    >>> keras.ops.shape(encoder(np.zeros((2, 7, 32), "float32")))
    (2, 7, 32)
    """

    def __init__(self, *, num_layers: int, **kwargs):
        super().__init__(**kwargs)
        check_positive_int("num_layers", num_layers)
        self.num_layers = num_layers

    def build(self, inputs_shape):
        self.blocks = self._blocks(TransformerEncoderBlock, self.num_layers, inputs_shape)
        # Pre-LN blocks leave their output un-normalised: the stack ends with a norm.
        self.final_norm = self._norm("final_norm", inputs_shape) if self.norm_first else None

    def call(
        self,
        inputs,
        padding_mask=None,
        attention_mask=None,
        training=None,
        return_attention_scores: bool = False,
    ):
        if padding_mask is None:
            padding_mask = masks.keras_mask(inputs)
        x = inputs  # (B, T, D)
        all_scores = []
        for block in self.blocks:
            x = block(
                x,
                padding_mask=padding_mask,
                attention_mask=attention_mask,
                training=training,
                return_attention_scores=return_attention_scores,
            )
            if return_attention_scores:
                x, scores = x
                all_scores.append(scores)
        if self.final_norm is not None:
            x = self.final_norm(x)  # (B, T, D)
        return (x, all_scores) if return_attention_scores else x

    def compute_output_spec(self, inputs, *args, **kwargs):
        return output_spec(self, tuple(inputs.shape), (inputs, *args), kwargs)

    def get_config(self):
        return {**super().get_config(), "num_layers": self.num_layers}
