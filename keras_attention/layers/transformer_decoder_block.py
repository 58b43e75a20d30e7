"""One decoder layer of the Transformer (Section 3.1), with key/value caches."""

import keras
from keras import ops

from keras_attention import masks
from keras_attention.layers.output_spec import output_spec
from keras_attention.layers.transformer_block_base import TransformerBlockBase


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerDecoderBlock(TransformerBlockBase):
    """Transformer decoder layer, Section 3.1.

    Causal multi-head self-attention, then encoder-decoder attention (queries from the
    decoder, keys and values from the encoder output), then the position-wise feed-forward
    network; each sub-layer is wrapped with dropout, a residual connection and layer
    normalisation. Built without an encoder sequence, the block has no cross-attention
    and serves decoder-only models (language models).

    Args:
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
            encoder keys/values from `compute_cross_attention_cache`, computed once. With it,
            `encoder_sequence`, its masks and the cache may hold one row per group of
            consecutive decoder rows (`batch` a multiple of theirs): the hypotheses of a beam
            search then share their sentence's keys and values, attended as one sentence's
            queries, instead of a copy per hypothesis.
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
        self._check_d_model(decoder_sequence_shape[-1])
        shape = decoder_sequence_shape
        self.self_attention = self._make_attention("self_attention", shape, shape)
        self.self_attention_norm = self._make_norm("self_attention_norm", shape)
        self.self_attention_dropout = self._make_dropout("self_attention_dropout")
        self.self_attention_connection = self._connection(
            self.self_attention_norm, self.self_attention_dropout
        )
        self.has_cross_attention = encoder_sequence_shape is not None
        if self.has_cross_attention:
            self.cross_attention = self._make_attention(
                "cross_attention", shape, encoder_sequence_shape
            )
            self.cross_attention_norm = self._make_norm("cross_attention_norm", shape)
            self.cross_attention_dropout = self._make_dropout("cross_attention_dropout")
            self.cross_attention_connection = self._connection(
                self.cross_attention_norm, self.cross_attention_dropout
            )
        self.feed_forward = self._make_feed_forward(shape)
        self.feed_forward_norm = self._make_norm("feed_forward_norm", shape)
        self.feed_forward_dropout = self._make_dropout("feed_forward_dropout")
        self.feed_forward_connection = self._connection(
            self.feed_forward_norm, self.feed_forward_dropout
        )

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
        training=None,
        return_attention_scores: bool = False,
    ):
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
        if decoder_padding_mask is None:
            decoder_padding_mask = masks.keras_mask(decoder_sequence)
        batch, target_len = tuple(decoder_sequence.shape[:2])
        masks.check_mask_shape("decoder_padding_mask", decoder_padding_mask, (batch, target_len))
        self_key_len = target_len if self_attention_cache is None else self_attention_cache.shape[2]
        masks.check_mask_shape(
            "decoder_attention_mask", decoder_attention_mask, (batch, target_len, self_key_len)
        )
        with_cache = self_attention_cache is not None

        def self_attention(normed):
            result = self.self_attention(
                query=normed,
                value=normed,
                query_mask=decoder_padding_mask,
                value_mask=decoder_padding_mask,
                attention_mask=decoder_attention_mask,
                use_causal_mask=use_causal_mask,
                cache=self_attention_cache,
                cache_update_index=self_attention_cache_update_index,
                append_to_cache=append_to_cache,
                return_attention_scores=return_attention_scores,
                training=training,
            )
            return _output_cache_scores(result, with_cache, return_attention_scores)

        x, new_cache, self_scores = self.self_attention_connection(
            decoder_sequence, self_attention, training
        )  # (B, T, D)
        scores = {"self_attention": self_scores}
        if self.has_cross_attention:
            if encoder_padding_mask is None:
                encoder_padding_mask = masks.keras_mask(encoder_sequence)
            source_batch, source_len = tuple(encoder_sequence.shape[:2])
            grouped = cross_attention_cache is not None  # rows may share a sentence's cache
            masks.check_mask_shape(
                "encoder_padding_mask",
                encoder_padding_mask,
                (source_batch if grouped else batch, source_len),
            )
            masks.check_mask_shape(
                "encoder_attention_mask", encoder_attention_mask, (batch, target_len, source_len)
            )

            def cross_attention(normed):
                query, query_mask, attention_mask = normed, decoder_padding_mask, None
                if grouped:  # (N, T, ...) -> (B, N / B * T, ...): a sentence's rows together
                    sentences = ops.shape(encoder_sequence)[0]
                    query, query_mask, attention_mask = (
                        None if t is None else _group_rows(t, sentences)
                        for t in (normed, decoder_padding_mask, encoder_attention_mask)
                    )
                result = self.cross_attention(
                    query=query,
                    value=encoder_sequence,
                    query_mask=query_mask,
                    value_mask=encoder_padding_mask,
                    attention_mask=attention_mask if grouped else encoder_attention_mask,
                    cache=cross_attention_cache,
                    return_attention_scores=return_attention_scores,
                    training=training,
                )
                output, _, scores = _output_cache_scores(result, False, return_attention_scores)
                if grouped:
                    output = ops.reshape(output, ops.shape(normed))  # (N, T, D)
                    scores = None if scores is None else _ungroup_scores(scores, normed)
                return output, None, scores

            x, _, scores["cross_attention"] = self.cross_attention_connection(
                x, cross_attention, training
            )  # (B, T, D)

        def feed_forward(normed):
            return self.feed_forward(normed, training=training)

        x = self.feed_forward_connection(x, feed_forward, training)  # (B, T, D)
        results = (x,)
        if with_cache:
            results += (new_cache,)
        if return_attention_scores:
            results += (scores,)
        return results[0] if len(results) == 1 else results

    def compute_output_spec(self, decoder_sequence, *args, **kwargs):
        return output_spec(self, tuple(decoder_sequence.shape), (decoder_sequence, *args), kwargs)


def _group_rows(x, sentences):
    """`(N, T, ...)` -> `(sentences, N / sentences * T, ...)`: consecutive rows of a sentence as
    one row of queries (the sizes spelt out: `-1` is ambiguous with no rows)."""
    shape = ops.shape(x)
    group = _rows_per_sentence(shape[0], sentences)
    return ops.reshape(x, (sentences, group * shape[1], *shape[2:]))


def _rows_per_sentence(rows, sentences):
    """`rows // sentences`, 0 with no sentence; Python ints stay ints (JAX's static shapes)."""
    if isinstance(rows, int) and isinstance(sentences, int):
        return rows // max(sentences, 1)
    return rows // ops.maximum(sentences, 1)


def _ungroup_scores(scores, rows):
    """Scores `(B, heads, G * T, S)` of grouped queries as `(N, heads, T, S)`, `N = B * G` the
    rows of `rows` `(N, T, D)`."""
    batch, heads, _, source = ops.shape(scores)
    rows, target = ops.shape(rows)[:2]
    group = _rows_per_sentence(rows, batch)
    scores = ops.reshape(scores, (batch, heads, group, target, source))
    return ops.reshape(ops.transpose(scores, (0, 2, 1, 3, 4)), (rows, heads, target, source))


def _output_cache_scores(result, with_cache: bool, with_scores: bool) -> tuple:
    """A `MultiHeadAttention` result as `(output, cache or None, scores or None)`."""
    if not (with_cache or with_scores):
        return result, None, None
    result = list(result)
    output = result.pop(0)
    cache = result.pop(0) if with_cache else None
    scores = result.pop(0) if with_scores else None
    return output, cache, scores
