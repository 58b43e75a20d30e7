"""One encoder layer of the Transformer (Section 3.1)."""

import keras

from keras_attention import masks
from keras_attention.layers.output_spec import output_spec
from keras_attention.layers.transformer_block_base import TransformerBlockBase


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerEncoderBlock(TransformerBlockBase):
    """Transformer encoder layer, Section 3.1.

    Multi-head self-attention, then the position-wise feed-forward network, each wrapped
    with dropout, a residual connection and layer normalisation (post-LN as in the paper,
    or pre-LN with `norm_first=True`).

    Args:
        num_heads: number of attention heads; must divide `d_model`.
        intermediate_dim: inner size of the feed-forward network (`d_ff`).
        dropout: residual dropout (the paper's `P_drop`, 0.1 in the base model).
        attention_dropout: dropout on the attention weights.
        activation_dropout: dropout on the feed-forward inner activation.
        activation: the feed-forward activation (`"relu"` in the paper).
        norm_first: pre-LN instead of post-LN.
        layer_norm_epsilon: epsilon of the layer normalisations.
        kernel_initializer: initializer of every kernel.
        bias_initializer: initializer of every bias.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: `(batch, seq_len, d_model)`.
        padding_mask: optional boolean `(batch, seq_len)`, `True` for real tokens; taken
            from the Keras mask of `inputs` when not given. Padded positions are masked as
            keys, and as queries (their attention output is zero).
        attention_mask: optional boolean `(batch, seq_len, seq_len)`, `True` = may attend.
        training: whether dropout is active.
        return_attention_scores: also return the self-attention weights
            `(batch, heads, seq_len, seq_len)`.

    Returns:
        `(batch, seq_len, d_model)`, and the weights when asked. The Keras mask is passed on.

    Example:

    >>> block = TransformerEncoderBlock(num_heads=4, intermediate_dim=64)
    >>> keras.ops.shape(block(np.zeros((2, 7, 32), "float32")))
    (2, 7, 32)
    """

    def build(self, inputs_shape):
        self._check_d_model(inputs_shape[-1])
        self.self_attention = self._make_attention("self_attention", inputs_shape, inputs_shape)
        self.self_attention_norm = self._make_norm("self_attention_norm", inputs_shape)
        self.self_attention_dropout = self._make_dropout("self_attention_dropout")
        self.feed_forward = self._make_feed_forward(inputs_shape)
        self.feed_forward_norm = self._make_norm("feed_forward_norm", inputs_shape)
        self.feed_forward_dropout = self._make_dropout("feed_forward_dropout")
        self.self_attention_connection = self._connection(
            self.self_attention_norm, self.self_attention_dropout
        )
        self.feed_forward_connection = self._connection(
            self.feed_forward_norm, self.feed_forward_dropout
        )

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
        masks.check_mask_shape("padding_mask", padding_mask, tuple(inputs.shape[:2]))
        seq_len = inputs.shape[1]
        masks.check_mask_shape(
            "attention_mask", attention_mask, (inputs.shape[0], seq_len, seq_len)
        )

        def self_attention(normed):
            # The padding mask is passed as both query and key mask, so that an explicit
            # `padding_mask` acts exactly as the Keras mask does (which Keras would
            # otherwise fill in as the query mask only when it is attached to `inputs`).
            return self.self_attention(
                query=normed,
                value=normed,
                query_mask=padding_mask,
                value_mask=padding_mask,
                attention_mask=attention_mask,
                training=training,
                return_attention_scores=return_attention_scores,
            )

        def feed_forward(normed):
            return self.feed_forward(normed, training=training)

        x = self.self_attention_connection(inputs, self_attention, training)  # (B, T, D)
        x, scores = x if return_attention_scores else (x, None)
        x = self.feed_forward_connection(x, feed_forward, training)  # (B, T, D)
        return (x, scores) if return_attention_scores else x

    def compute_output_spec(self, inputs, *args, **kwargs):
        return output_spec(self, tuple(inputs.shape), (inputs, *args), kwargs)
