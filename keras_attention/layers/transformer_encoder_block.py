"""One encoder layer of the Transformer (Section 3.1)."""

import keras
from keras import ops

from keras_attention import masks
from keras_attention.layers.block_arguments import BlockArguments
from keras_attention.layers.output_spec import output_spec


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerEncoderBlock(BlockArguments):
    """Transformer encoder layer, Section 3.1.

    Multi-head self-attention, then the position-wise feed-forward network. Each sub-layer
    has its dropout, residual connection and layer normalisation: post-LN as in the paper,
    `LayerNorm(x + Dropout(Sublayer(x)))`, or pre-LN with `norm_first=True`,
    `x + Dropout(Sublayer(LayerNorm(x)))`.

    Args (keyword-only):
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
        self.self_attention = self._attention("self_attention", inputs_shape, inputs_shape)
        self.self_attention_norm = self._norm("self_attention_norm", inputs_shape)
        self.self_attention_dropout = self._dropout("self_attention_dropout")
        self.feed_forward = self._feed_forward("feed_forward", inputs_shape)
        self.feed_forward_norm = self._norm("feed_forward_norm", inputs_shape)
        self.feed_forward_dropout = self._dropout("feed_forward_dropout")

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
        x = inputs  # (B, T, D)

        # Sub-layer 1: multi-head self-attention. The padding mask is both the query and the
        # key mask, so that an explicit `padding_mask` acts exactly as the Keras mask does.
        normed = self._pre_norm(self.self_attention_norm, x)
        attended = self.self_attention(
            normed,
            normed,
            query_mask=padding_mask,
            value_mask=padding_mask,
            attention_mask=attention_mask,
            training=training,
            return_attention_scores=return_attention_scores,
        )
        attended, scores = attended if return_attention_scores else (attended, None)
        x = self._add_and_post_norm(
            self.self_attention_norm, x, self.self_attention_dropout(attended, training=training)
        )

        # Sub-layer 2: position-wise feed-forward network.
        fed = self.feed_forward(self._pre_norm(self.feed_forward_norm, x), training=training)
        x = self._add_and_post_norm(
            self.feed_forward_norm, x, self.feed_forward_dropout(fed, training=training)
        )
        return (x, scores) if return_attention_scores else x

    def _pre_norm(self, norm, x):
        """Pre-LN normalises a sub-layer's input; post-LN passes it as it is."""
        return norm(x) if self.norm_first else x

    def _add_and_post_norm(self, norm, x, sublayer_output):
        """The residual connection; post-LN normalises its sum."""
        x = ops.add(x, sublayer_output)
        return x if self.norm_first else norm(x)

    def compute_output_spec(self, inputs, *args, **kwargs):
        return output_spec(self, tuple(inputs.shape), (inputs, *args), kwargs)
