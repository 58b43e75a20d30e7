"""One decoder layer of the Transformer (Section 3.1), with key/value caches."""

import keras
from keras import ops

from keras_attention import masks
from keras_attention.layers.block_arguments import BlockArguments
from keras_attention.layers.output_spec import output_spec


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerDecoderBlock(BlockArguments):
    """Transformer decoder layer, Section 3.1.

    Causal multi-head self-attention, then encoder-decoder attention (queries from the
    decoder, keys and values from the encoder output), then the position-wise feed-forward
    network. Each sub-layer has its dropout, residual connection and layer normalisation:
    post-LN as in the paper, `LayerNorm(x + Dropout(Sublayer(x)))`, or pre-LN with
    `norm_first=True`, `x + Dropout(Sublayer(LayerNorm(x)))`. Built without an encoder
    sequence, the block has no cross-attention and serves decoder-only models (language
    models).

    Args (keyword-only):
        num_heads: number of attention heads; must divide `d_model`.
        intermediate_dim: inner size of the feed-forward network (`d_ff`).
        dropout: residual dropout (the paper's `P_drop`).
        attention_dropout: dropout on the attention weights.
        activation_dropout: dropout on the feed-forward inner activation.
        activation: the feed-forward activation.
        norm_first: pre-LN instead of the paper's post-LN.
        layer_norm_epsilon: epsilon of the layer normalisations.
        kernel_initializer: initializer of every kernel.
        bias_initializer: initializer of every bias.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        decoder_sequence: `(batch, target_len, d_model)`.
        encoder_sequence: `(batch, source_len, d_model)`; required when the block was built
            with cross-attention.
        decoder_padding_mask: optional boolean `(batch, target_len)`; defaults to the Keras
            mask of `decoder_sequence`. Padded positions are masked as keys, and as queries
            (their attention outputs are zero). Not applied to the cache in incremental
            decoding.
        decoder_attention_mask: optional boolean `(batch, target_len, target_len)`, or
            `(batch, target_len, max_len)` over the cache.
        encoder_padding_mask: optional boolean `(batch, source_len)`; defaults to the Keras
            mask of `encoder_sequence`.
        encoder_attention_mask: optional boolean `(batch, target_len, source_len)`.
        self_attention_cache: optional `(2, batch, heads, max_len, head_dim)` cache of the
            self-attention keys/values (`initial_cache` makes an empty one).
        self_attention_cache_update_index: where this call's positions are written.
        append_to_cache: append this call's positions to the self-attention cache, which
            holds exactly the positions before them, instead of writing them into a
            fixed-size one (see `MultiHeadAttention`).
        cross_attention_cache: optional `(2, batch, heads, source_len, head_dim)` projected
            encoder keys/values from `compute_cross_attention_cache`, computed once.
        encoder_group_size: how many consecutive decoder rows share one row of
            `encoder_sequence`, its padding mask and `cross_attention_cache` (default 1).
            The hypotheses of a beam search share their sentence's encoder output this way,
            attended as one sentence's queries, instead of a copy per hypothesis;
            `encoder_attention_mask` has the decoder's rows.
        use_causal_mask: mask future positions (default `True`).
        training: whether dropout is active.
        return_attention_scores: also return `{"self_attention": (batch, heads, T, T),
            "cross_attention": (batch, heads, T, S)}`.

    Returns:
        `(batch, target_len, d_model)`; then the updated self-attention cache when
        `self_attention_cache` is given; then the scores dict when asked.

    Example:

    >>> block = TransformerDecoderBlock(num_heads=4, intermediate_dim=64)
    >>> target, source = np.zeros((2, 5, 32), "float32"), np.zeros((2, 7, 32), "float32")
    >>> keras.ops.shape(block(target, source))
    (2, 5, 32)
    """

    def build(self, decoder_sequence_shape, encoder_sequence_shape=None):
        shape = decoder_sequence_shape
        self.self_attention = self._attention("self_attention", shape, shape)
        self.self_attention_norm = self._norm("self_attention_norm", shape)
        self.self_attention_dropout = self._dropout("self_attention_dropout")
        self.has_cross_attention = encoder_sequence_shape is not None
        if self.has_cross_attention:
            self.cross_attention = self._attention("cross_attention", shape, encoder_sequence_shape)
            self.cross_attention_norm = self._norm("cross_attention_norm", shape)
            self.cross_attention_dropout = self._dropout("cross_attention_dropout")
        self.feed_forward = self._feed_forward("feed_forward", shape)
        self.feed_forward_norm = self._norm("feed_forward_norm", shape)
        self.feed_forward_dropout = self._dropout("feed_forward_dropout")

    def initial_cache(self, batch_size, max_length):
        """An empty self-attention cache `(2, batch_size, heads, max_length, head_dim)`."""
        return self.self_attention.initial_cache(batch_size, max_length)

    def compute_cross_attention_cache(self, encoder_sequence):
        """Projects the encoder output once into `(2, batch, heads, source_len, head_dim)`."""
        return self.cross_attention.compute_key_value_cache(encoder_sequence)

    def call(
        self,
        decoder_sequence,
        encoder_sequence=None,
        decoder_padding_mask=None,
        decoder_attention_mask=None,
        encoder_padding_mask=None,
        encoder_attention_mask=None,
        self_attention_cache=None,
        self_attention_cache_update_index=None,
        cross_attention_cache=None,
        use_causal_mask: bool = True,
        append_to_cache: bool = False,
        encoder_group_size: int = 1,
        training=None,
        return_attention_scores: bool = False,
    ):
        if decoder_padding_mask is None:
            decoder_padding_mask = masks.keras_mask(decoder_sequence)
        if encoder_padding_mask is None and encoder_sequence is not None:
            encoder_padding_mask = masks.keras_mask(encoder_sequence)
        self._check_call(
            decoder_sequence, encoder_sequence, decoder_padding_mask, decoder_attention_mask,
            encoder_padding_mask, encoder_attention_mask, self_attention_cache,
            self_attention_cache_update_index, encoder_group_size,
        )  # fmt: skip
        x = decoder_sequence  # (B, T, D)
        scores = {}

        # Sub-layer 1: masked multi-head self-attention (over the cache when decoding).
        attended, new_cache, scores["self_attention"] = self._attend_to_self(
            self._pre_norm(self.self_attention_norm, x),
            decoder_padding_mask,
            decoder_attention_mask,
            use_causal_mask,
            self_attention_cache,
            self_attention_cache_update_index,
            append_to_cache,
            return_attention_scores,
            training,
        )
        x = self._add_and_post_norm(
            self.self_attention_norm, x, self.self_attention_dropout(attended, training=training)
        )

        # Sub-layer 2: encoder-decoder attention (none in a decoder-only block).
        if self.has_cross_attention:
            attended, scores["cross_attention"] = self._attend_to_encoder(
                self._pre_norm(self.cross_attention_norm, x),
                encoder_sequence,
                decoder_padding_mask,
                encoder_padding_mask,
                encoder_attention_mask,
                cross_attention_cache,
                encoder_group_size,
                return_attention_scores,
                training,
            )
            x = self._add_and_post_norm(
                self.cross_attention_norm,
                x,
                self.cross_attention_dropout(attended, training=training),
            )

        # Sub-layer 3: position-wise feed-forward network.
        fed = self.feed_forward(self._pre_norm(self.feed_forward_norm, x), training=training)
        x = self._add_and_post_norm(
            self.feed_forward_norm, x, self.feed_forward_dropout(fed, training=training)
        )

        results = (x,)
        if self_attention_cache is not None:
            results += (new_cache,)
        if return_attention_scores:
            results += (scores,)
        return results[0] if len(results) == 1 else results

    def _pre_norm(self, norm, x):
        """Pre-LN normalises a sub-layer's input; post-LN passes it as it is."""
        return norm(x) if self.norm_first else x

    def _add_and_post_norm(self, norm, x, sublayer_output):
        """The residual connection; post-LN normalises its sum."""
        x = ops.add(x, sublayer_output)
        return x if self.norm_first else norm(x)

    def _attend_to_self(
        self,
        x,
        padding_mask,
        attention_mask,
        use_causal_mask: bool,
        cache,
        cache_update_index,
        append_to_cache: bool,
        return_attention_scores: bool,
        training,
    ) -> tuple:
        """The self-attention of `x`: `(output, updated cache or None, scores or None)`."""
        result = self.self_attention(
            query=x,
            value=x,
            query_mask=padding_mask,
            value_mask=padding_mask,
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask,
            cache=cache,
            cache_update_index=cache_update_index,
            append_to_cache=append_to_cache,
            return_attention_scores=return_attention_scores,
            training=training,
        )
        if cache is None and not return_attention_scores:
            return result, None, None
        result = list(result)
        output = result.pop(0)
        new_cache = result.pop(0) if cache is not None else None
        return output, new_cache, result.pop(0) if return_attention_scores else None

    def _attend_to_encoder(
        self,
        x,
        encoder_sequence,
        decoder_padding_mask,
        encoder_padding_mask,
        encoder_attention_mask,
        cross_attention_cache,
        encoder_group_size: int,
        return_attention_scores: bool,
        training,
    ) -> tuple:
        """The attention of `x` over the encoder output: `(output, scores or None)`."""
        result = self.cross_attention(
            query=x,
            value=encoder_sequence,
            query_mask=decoder_padding_mask,
            value_mask=encoder_padding_mask,
            attention_mask=encoder_attention_mask,
            cache=cross_attention_cache,
            query_group_size=encoder_group_size,
            return_attention_scores=return_attention_scores,
            training=training,
        )
        return result if return_attention_scores else (result, None)

    def _check_call(
        self,
        decoder_sequence,
        encoder_sequence,
        decoder_padding_mask,
        decoder_attention_mask,
        encoder_padding_mask,
        encoder_attention_mask,
        self_attention_cache,
        self_attention_cache_update_index,
        encoder_group_size: int,
    ) -> None:
        """Raises a `ValueError` naming the call argument that does not fit the block."""
        if self.has_cross_attention and encoder_sequence is None:
            raise ValueError(
                f"{self.name} was built with cross-attention, so encoder_sequence is "
                "required; got encoder_sequence=None"
            )
        if not self.has_cross_attention and encoder_sequence is not None:
            raise ValueError(
                f"{self.name} was built without cross-attention (decoder-only); got an "
                f"encoder_sequence of shape {encoder_sequence.shape}"
            )
        if self_attention_cache is not None and self_attention_cache_update_index is None:
            raise ValueError(
                "self_attention_cache needs self_attention_cache_update_index (the position "
                "of this call's first token); got self_attention_cache_update_index=None"
            )
        batch, target_len = tuple(decoder_sequence.shape[:2])
        masks.check_mask_shape("decoder_padding_mask", decoder_padding_mask, (batch, target_len))
        self_key_len = target_len if self_attention_cache is None else self_attention_cache.shape[2]
        masks.check_mask_shape(
            "decoder_attention_mask", decoder_attention_mask, (batch, target_len, self_key_len)
        )
        if encoder_sequence is None:
            return
        source_batch, source_len = tuple(encoder_sequence.shape[:2])
        if None not in (batch, source_batch) and batch != source_batch * encoder_group_size:
            raise ValueError(
                f"decoder_sequence must have encoder_group_size={encoder_group_size} rows per "
                f"row of encoder_sequence; got decoder_sequence.shape="
                f"{tuple(decoder_sequence.shape)}, encoder_sequence.shape="
                f"{tuple(encoder_sequence.shape)}"
            )
        masks.check_mask_shape(
            "encoder_padding_mask", encoder_padding_mask, (source_batch, source_len)
        )
        masks.check_mask_shape(
            "encoder_attention_mask", encoder_attention_mask, (batch, target_len, source_len)
        )

    def compute_output_spec(self, decoder_sequence, *args, **kwargs):
        return output_spec(self, tuple(decoder_sequence.shape), (decoder_sequence, *args), kwargs)
