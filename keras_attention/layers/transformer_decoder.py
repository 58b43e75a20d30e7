"""The decoder stack of the Transformer (Section 3.1), with per-layer key/value caches."""

import keras

from keras_attention import masks
from keras_attention.core.checks import check_positive_int
from keras_attention.layers.block_arguments import BlockArguments
from keras_attention.layers.output_spec import output_spec
from keras_attention.layers.transformer_decoder_block import TransformerDecoderBlock


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerDecoder(BlockArguments):
    """Transformer decoder: a stack of `num_layers` identical decoder blocks, Section 3.1.

    Built without an encoder sequence, the blocks have no cross-attention (a decoder-only
    stack for language models).

    Args (keyword-only):
        num_layers: number of blocks (`N = 6` in the paper).
        num_heads: number of attention heads.
        intermediate_dim: inner size of the feed-forward networks (`d_ff`).
        **kwargs: the other arguments of `TransformerDecoderBlock` and of
            `keras.layers.Layer`.

    Call arguments:
        decoder_sequence: `(batch, target_len, d_model)`.
        encoder_sequence: `(batch, source_len, d_model)` (omit for decoder-only).
        decoder_padding_mask, decoder_attention_mask, encoder_padding_mask,
        encoder_attention_mask: as in `TransformerDecoderBlock`, for every block.
        self_attention_cache: optional list with one self-attention cache per block
            (`initial_cache` makes them).
        self_attention_cache_update_index: where this call's positions are written.
        append_to_cache: append to the self-attention caches rather than write into them
            (see `TransformerDecoderBlock`).
        cross_attention_cache: optional list with one cross-attention cache per block
            (`compute_cross_attention_cache` makes them).
        encoder_group_size: how many consecutive decoder rows share one row of
            `encoder_sequence` (a beam's hypotheses; see `TransformerDecoderBlock`).
        use_causal_mask: mask future positions (default `True`).
        training: whether dropout is active.
        return_attention_scores: also return a list with each block's scores dict.

    Returns:
        `(batch, target_len, d_model)`; then the list of updated self-attention caches when
        `self_attention_cache` is given; then the list of scores when asked.

    Example:

    >>> decoder = TransformerDecoder(num_layers=2, num_heads=4, intermediate_dim=64)
    >>> target, source = np.zeros((2, 5, 32), "float32"), np.zeros((2, 7, 32), "float32")
    >>> keras.ops.shape(decoder(target, source))
    (2, 5, 32)
    """

    def __init__(self, *, num_layers: int, **kwargs):
        super().__init__(**kwargs)
        check_positive_int("num_layers", num_layers)
        self.num_layers = num_layers

    def build(self, decoder_sequence_shape, encoder_sequence_shape=None):
        shape = decoder_sequence_shape
        self.blocks = self._blocks(
            TransformerDecoderBlock, self.num_layers, shape, encoder_sequence_shape
        )
        # Pre-LN blocks leave their output un-normalised: the stack ends with a norm.
        self.final_norm = self._norm("final_norm", shape) if self.norm_first else None

    def initial_cache(self, batch_size, max_length) -> list:
        """Empty self-attention caches, one `(2, batch_size, heads, max_length, head_dim)`
        per block (`max_length` 0: to grow with `append_to_cache`)."""
        return [block.initial_cache(batch_size, max_length) for block in self.blocks]

    def compute_cross_attention_cache(self, encoder_sequence) -> list:
        """The encoder keys/values projected once for every block's cross-attention."""
        return [block.compute_cross_attention_cache(encoder_sequence) for block in self.blocks]

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
        for name, caches in (
            ("self_attention_cache", self_attention_cache),
            ("cross_attention_cache", cross_attention_cache),
        ):
            if caches is not None and len(caches) != self.num_layers:
                raise ValueError(
                    f"{name} must hold one cache per block ({self.num_layers}); got {len(caches)}"
                )
        if decoder_padding_mask is None:
            decoder_padding_mask = masks.keras_mask(decoder_sequence)
        if encoder_padding_mask is None and encoder_sequence is not None:
            encoder_padding_mask = masks.keras_mask(encoder_sequence)
        x = decoder_sequence  # (B, T, D)
        new_caches, all_scores = [], []
        for index, block in enumerate(self.blocks):
            result = block(
                x,
                encoder_sequence,
                decoder_padding_mask=decoder_padding_mask,
                decoder_attention_mask=decoder_attention_mask,
                encoder_padding_mask=encoder_padding_mask,
                encoder_attention_mask=encoder_attention_mask,
                self_attention_cache=None
                if self_attention_cache is None
                else self_attention_cache[index],
                self_attention_cache_update_index=self_attention_cache_update_index,
                cross_attention_cache=None
                if cross_attention_cache is None
                else cross_attention_cache[index],
                use_causal_mask=use_causal_mask,
                append_to_cache=append_to_cache,
                encoder_group_size=encoder_group_size,
                training=training,
                return_attention_scores=return_attention_scores,
            )
            if self_attention_cache is None and not return_attention_scores:
                x = result
                continue
            result = list(result)
            x = result.pop(0)
            if self_attention_cache is not None:
                new_caches.append(result.pop(0))
            if return_attention_scores:
                all_scores.append(result.pop(0))
        if self.final_norm is not None:
            x = self.final_norm(x)  # (B, T, D)
        results = (x,)
        if self_attention_cache is not None:
            results += (new_caches,)
        if return_attention_scores:
            results += (all_scores,)
        return results[0] if len(results) == 1 else results

    def compute_output_spec(self, decoder_sequence, *args, **kwargs):
        return output_spec(self, tuple(decoder_sequence.shape), (decoder_sequence, *args), kwargs)

    def get_config(self):
        return {**super().get_config(), "num_layers": self.num_layers}
