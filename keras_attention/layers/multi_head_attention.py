"""Multi-head attention (Section 3.2.2) with a key/value cache for incremental decoding.

Our own rather than `keras.layers.MultiHeadAttention` or keras-hub's cached one: their
`EinsumDense` projections have a per-example gradient on TensorFlow that a 2-D matmul avoids
(training 1.57x keras-hub's on identical batches, `tools/benchmark.py train`). Ours are `Dense`
layers on the flattened heads, called as layers.
"""

import math

import keras
from keras import ops

from keras_attention import masks
from keras_attention.core.checks import check_positive_float, check_positive_int, check_rate
from keras_attention.core.sequence_buffer import write_positions
from keras_attention.layers.initializers import clone_initializer
from keras_attention.layers.legacy_weights import ProjectionDense
from keras_attention.layers.output_spec import output_spec
from keras_attention.layers.quantized_sublayers import QuantizedSublayersMixin
from keras_attention.layers.scaled_dot_product_attention import scaled_dot_product_attention


@keras.saving.register_keras_serializable(package="keras_attention")
class MultiHeadAttention(QuantizedSublayersMixin, keras.layers.Layer):
    """Multi-head attention, Section 3.2.2.

    `MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O` with
    `head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)`. All heads are computed at once: one
    projection each for Q, K and V (a `Dense` layer into `heads * head_dim` units, reshaped
    to `(batch, length, heads, head_dim)`), one batched attention, and one output projection
    (a `Dense` layer on the flattened heads). The projections are called as layers, so
    Keras's machinery works on them: `enable_lora(rank)` on each (`query_dense`,
    `key_dense`, `value_dense`, `output_dense`), `model.quantize(mode)` in every mode that
    `Dense` offers, regularizers and constraints. Without attention dropout, requested
    scores or a float16 compute dtype it runs `keras.ops.dot_product_attention` (the
    backend's fused kernel where there is one); otherwise `scaled_dot_product_attention`,
    whose logits are computed in float32.

    The call signature is that of `keras.layers.MultiHeadAttention`, plus a key/value cache
    for incremental decoding. The cache is data: passed in and returned, never stored.

    Args:
        num_heads: number of attention heads `h`.
        key_dim: size of each head for query and key (`d_k`); defaults to
            `d_model // num_heads`, where `d_model` is the query's last dimension.
        value_dim: size of each head for value (`d_v`); defaults to `key_dim`.
        dropout: dropout rate on the attention weights.
        use_bias: whether the projections have biases.
        output_shape: size of the output (an int, or a 1-tuple as
            `keras.layers.MultiHeadAttention` takes); defaults to the query's last dimension.
            Old configs' `output_dim` is read as `output_shape`.
        attention_axes: `None` or `(1,)`: attention over the sequence axis (the only one
            this layer supports; accepted for `keras.layers.MultiHeadAttention`'s signature).
        kernel_initializer: initializer of the projection kernels.
        bias_initializer: initializer of the projection biases.
        kernel_regularizer: regularizer of the projection kernels.
        bias_regularizer: regularizer of the projection biases.
        kernel_constraint: constraint on the projection kernels.
        bias_constraint: constraint on the projection biases.
        seed: optional int seed for the dropout.
        scale: multiplier of the attention logits; defaults to `1 / sqrt(key_dim)`, the
            paper's scaling (Section 3.2.1). `scale=1.0` is unscaled dot-product attention.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        query: `(batch, query_len, d_query)`.
        value: `(batch, key_len, d_value)`.
        key: optional `(batch, key_len, d_key)`; defaults to `value`.
        query_mask: optional boolean `(batch, query_len)`; filled from the Keras mask of `query`.
        value_mask: optional boolean `(batch, key_len)`; filled from the Keras mask of `value`.
        key_mask: optional boolean `(batch, key_len)`; defaults to `value_mask`.
        attention_mask: optional boolean `(batch, query_len, key_len)`, `True` = may attend.
        return_attention_scores: also return the weights `(batch, heads, query_len, key_len)`.
        training: whether dropout is active.
        use_causal_mask: mask keys that come after the query (decoder self-attention).
        cache: optional `(2, batch, heads, max_len, head_dim)` projected keys (`cache[0]`)
            and values (`cache[1]`). Keys and values first, so that taking them apart is
            free (a slice of the outer axis shares the buffer; `cache[:, 0]` of a
            batch-first cache was a copy at every step); heads before positions, so that
            attending over the cache is a batched matmul with no transpose of the cache
            (about 5x faster per decoding step than the positions-first layout, measured on
            TensorFlow). With `cache_update_index`, the keys and values of this call are
            written into the cache at that index, and the queries attend over the cache:
            positions at or after `cache_update_index + query_len` (not yet written) are
            masked, and `use_causal_mask` masks within the new positions. Without
            `cache_update_index` the cache is used as the keys and values as they are (for
            cross-attention over an encoder output computed once); `key` and `value` are
            then not projected again.
        cache_update_index: int or scalar int tensor, where this call's keys/values go.
        append_to_cache: with `cache_update_index`, append this call's keys and values to
            the cache (which must then hold exactly the `cache_update_index` positions
            before them) instead of writing them into a buffer of fixed size. The cache
            then holds only written positions: no mask of unwritten ones, and a decoding
            step costs in proportion to its position rather than to the longest output
            (the searches grow caches this way on TensorFlow and PyTorch; JAX, which
            needs static shapes in a loop, writes into a fixed buffer).
        query_group_size: how many consecutive rows of `query` share one row of `value`,
            `key`, their masks and a projected `cache` (default 1: a row each). A beam
            search's hypotheses share their sentence's encoder output this way: `query` has
            `batch * query_group_size` rows, attended as one row of queries per sentence,
            instead of a copy of the keys and values per hypothesis. `query_mask` and
            `attention_mask` have `query`'s rows. Not with `use_causal_mask` or
            `cache_update_index` (self-attention).

    Returns:
        The output `(batch, query_len, output_shape)`; then, in this order and only when asked,
        the updated cache and the attention weights: the order of every layer of the
        library (blocks, stacks), which agrees with `keras.layers.MultiHeadAttention`
        (output, scores) and keras-hub's cached attention (output, cache).

    Example:

    >>> mha = MultiHeadAttention(num_heads=4)
    >>> x = np.random.rand(2, 6, 32).astype("float32")
    >>> keras.ops.shape(mha(x, x, use_causal_mask=True))
    (2, 6, 32)
    """

    def __init__(
        self,
        num_heads: int,
        key_dim: int | None = None,
        value_dim: int | None = None,
        dropout: float = 0.0,
        use_bias: bool = True,
        output_shape: int | None = None,
        attention_axes=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        seed: int | None = None,
        scale: float | None = None,
        **kwargs,
    ):
        # `output_dim` was this argument's name before it took keras's; old configs use it.
        legacy_output_dim = kwargs.pop("output_dim", None)
        super().__init__(**kwargs)
        if legacy_output_dim is not None:
            if output_shape is not None:
                raise ValueError(
                    "give output_shape only (output_dim is its old name); got "
                    f"output_shape={output_shape}, output_dim={legacy_output_dim}"
                )
            output_shape = legacy_output_dim
        output_shape = _output_size(output_shape)
        check_positive_int("num_heads", num_heads)
        check_positive_int("key_dim", key_dim, allow_none=True)
        check_positive_int("value_dim", value_dim, allow_none=True)
        check_positive_int("output_shape", output_shape, allow_none=True)
        check_rate("dropout", dropout)
        if scale is not None:
            check_positive_float("scale", scale)
        if attention_axes is not None and tuple(_as_tuple(attention_axes)) not in ((1,), (-3,)):
            raise ValueError(
                "attention_axes: this layer attends over the sequence axis of "
                "(batch, length, depth) inputs only (attention_axes=None or (1,)); got "
                f"attention_axes={attention_axes}"
            )
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim
        self.dropout = dropout
        self.use_bias = use_bias
        self.output_shape = output_shape
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.bias_constraint = keras.constraints.get(bias_constraint)
        self.attention_axes = attention_axes
        self.seed = seed
        self.scale = scale
        self.supports_masking = True
        self.seed_generator = keras.random.SeedGenerator(seed) if dropout > 0 else None

    def _projection(self, units: int, name: str) -> ProjectionDense:
        return ProjectionDense(
            units,
            use_bias=self.use_bias,
            # Fresh initializer copies, so that a seeded initializer does not give Q, K and V
            # the same starting weights.
            kernel_initializer=clone_initializer(self.kernel_initializer, name),
            bias_initializer=clone_initializer(self.bias_initializer, name),
            kernel_regularizer=self.kernel_regularizer,
            bias_regularizer=self.bias_regularizer,
            kernel_constraint=self.kernel_constraint,
            bias_constraint=self.bias_constraint,
            dtype=self.dtype_policy,
            name=name,
        )

    def build(self, query_shape, value_shape, key_shape=None):
        _check_ranks(query_shape, value_shape, key_shape)
        key_shape = value_shape if key_shape is None else key_shape
        d_model = query_shape[-1]
        if self.key_dim is None and d_model % self.num_heads:
            raise ValueError(
                "num_heads must divide d_model when key_dim is not given; got "
                f"num_heads={self.num_heads}, d_model={d_model}"
            )
        self.head_key_dim = self.key_dim or d_model // self.num_heads
        self.head_value_dim = self.value_dim or self.head_key_dim
        heads = self.num_heads
        self.query_dense = self._projection(heads * self.head_key_dim, "query")
        self.key_dense = self._projection(heads * self.head_key_dim, "key")
        self.value_dense = self._projection(heads * self.head_value_dim, "value")
        self.output_dense = self._projection(self.output_shape or d_model, "attention_output")
        self.query_dense.build(query_shape)
        self.key_dense.build(key_shape)
        self.value_dense.build(value_shape)
        self.output_dense.build((None, None, heads * self.head_value_dim))

    @property
    def output_dim(self) -> int | None:
        """The old name of `output_shape`."""
        return self.output_shape

    def _heads(self, dense: keras.layers.Dense, x):
        """`(B, T, d) -> (B, T, heads, head_dim)`: `dense` (`heads * head_dim` units), reshaped."""
        y = dense(x)  # (B, T, N * H)
        shape = ops.shape(x)
        return ops.reshape(y, (shape[0], shape[1], self.num_heads, dense.units // self.num_heads))

    def initial_cache(self, batch_size, max_length):
        """An all-zero self-attention cache `(2, batch_size, heads, max_length, head_dim)`.

        `max_length` 0 makes an empty cache to grow with `append_to_cache`.
        """
        self._check_cacheable()
        shape = (2, batch_size, self.num_heads, max_length, self.head_key_dim)
        return ops.zeros(shape, dtype=self.compute_dtype)

    def compute_key_value_cache(self, value, key=None):
        """Projects `key`/`value` once into a cache `(2, batch, heads, key_len, head_dim)`.

        Pass the result as `cache` (without `cache_update_index`) to attend over it
        without projecting the keys and values again, e.g. an encoder output.
        """
        self._check_cacheable()
        key = value if key is None else key
        return _key_value_cache(
            self._heads(self.key_dense, key), self._heads(self.value_dense, value)
        )

    def _check_cacheable(self) -> None:
        if not self.built:
            raise ValueError(f"{self.name} must be built (called once) before making a cache")
        if self.head_key_dim != self.head_value_dim:
            raise ValueError(
                "a key/value cache needs key_dim == value_dim; got "
                f"key_dim={self.head_key_dim}, value_dim={self.head_value_dim}"
            )

    def _check_cache(self, cache, cache_update_index, append_to_cache: bool) -> None:
        """Raises a `ValueError` naming `cache` when it cannot be this layer's cache."""
        if append_to_cache and cache_update_index is None:
            raise ValueError(
                "append_to_cache needs a cache and its cache_update_index; got "
                f"cache_update_index=None (cache is {'None' if cache is None else 'given'})"
            )
        if cache is None:
            if cache_update_index is not None:
                raise ValueError(
                    "cache_update_index needs a cache; got cache=None, "
                    f"cache_update_index={cache_update_index}"
                )
            return
        self._check_cacheable()
        expected = (2, None, self.num_heads, None, self.head_key_dim)
        shape = tuple(cache.shape)
        if len(shape) != len(expected) or any(
            want is not None and have is not None and have != want
            for have, want in zip(shape, expected, strict=True)
        ):
            raise ValueError(
                "cache must have shape (2, batch, num_heads, max_len, head_dim) = "
                f"(2, ?, {self.num_heads}, ?, {self.head_key_dim}); got cache.shape={shape}"
            )

    def _attention_mask(
        self,
        query,
        key_length,
        padding,
        attention_mask,
        use_causal_mask: bool,
        cache_update_index,
        cache_all_written: bool = False,
    ):
        """Adds the causal, cache and explicit masks to `padding` (from the padding masks).

        `cache_all_written`: the cache (grown by appending) holds only written positions,
        the last `query_len` of them this call's: no mask of unwritten positions, and none
        at all for one query position.

        Returns one boolean `(batch or 1, query_len, key_len)` mask, or None.
        """
        query_length = ops.shape(query)[1]
        static_key_length = key_length if isinstance(key_length, int) else None
        masks.check_mask_shape(
            "attention_mask", attention_mask, (query.shape[0], query.shape[1], static_key_length)
        )
        mask = padding
        if cache_all_written:
            if use_causal_mask and query.shape[1] != 1:
                offset = key_length - query_length
                mask = masks.merge_masks(
                    mask, masks.causal_mask(query_length, key_length, offset)[None]
                )
        elif cache_update_index is not None:
            if use_causal_mask:
                written = masks.causal_mask(query_length, key_length, cache_update_index)
            else:
                positions = ops.arange(key_length, dtype="int32")
                limit = ops.cast(cache_update_index, "int32") + query_length
                written = ops.broadcast_to(positions < limit, (query_length, key_length))
            mask = masks.merge_masks(mask, written[None])
        elif use_causal_mask:
            mask = masks.merge_masks(mask, masks.causal_mask(query_length, key_length)[None])
        return masks.merge_masks(mask, attention_mask)

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        return_attention_scores: bool = False,
        training=None,
        use_causal_mask: bool = False,
        cache=None,
        cache_update_index=None,
        append_to_cache: bool = False,
        query_group_size: int = 1,
    ):
        if query_group_size != 1:
            return self._call_grouped(
                query_group_size, query, value, key, query_mask, value_mask, key_mask,
                attention_mask, return_attention_scores, training, use_causal_mask, cache,
                cache_update_index, append_to_cache,
            )  # fmt: skip
        _check_ranks(query.shape, value.shape, None if key is None else key.shape)
        self._check_cache(cache, cache_update_index, append_to_cache)
        key = value if key is None else key
        masks.check_mask_shape("value_mask", value_mask, (value.shape[0], value.shape[1]))
        masks.check_mask_shape("key_mask", key_mask, (key.shape[0], key.shape[1]))
        masks.check_mask_shape("query_mask", query_mask, (query.shape[0], query.shape[1]))
        query_heads = self._heads(self.query_dense, query)  # (B, Tq, N, Hk)
        if cache is not None:
            return self._call_with_cache(
                query, key, value, query_heads, query_mask, value_mask, key_mask,
                attention_mask, use_causal_mask, cache, cache_update_index, append_to_cache,
                return_attention_scores, training,
            )  # fmt: skip
        key_heads = self._heads(self.key_dense, key)  # (B, Tk, N, Hk)
        value_heads = self._heads(self.value_dense, value)  # (B, Tk, N, Hv)
        key_length = ops.shape(key_heads)[1]
        padding = masks.attention_mask_from_padding(
            query_mask, masks.merge_masks(value_mask, key_mask)
        )  # (B, Tq|1, Tk|1)
        mask = self._attention_mask(
            query, key_length, padding, attention_mask, use_causal_mask, None
        )
        mask4 = None if mask is None else mask[:, None]  # (B, 1, Tq, Tk)
        scale = self._logit_scale()
        dropout_active = bool(training) and self.dropout > 0
        # Backends' fused kernels may compute Q K^T in float16, where it overflows (TensorFlow
        # does); `scaled_dot_product_attention` computes the logits in float32.
        float16 = self.compute_dtype == "float16"
        # JAX's fused kernel gets the output's shape wrong when the key and value depths
        # differ (measured: (B, Tq, N, 1, Hk) for (B, Tq, N, Hv)).
        depths_differ = self.head_key_dim != self.head_value_dim
        if return_attention_scores or dropout_active or float16 or depths_differ:
            attended, scores = scaled_dot_product_attention(
                ops.swapaxes(query_heads, 1, 2),  # (B, N, Tq, Hk)
                ops.swapaxes(key_heads, 1, 2),  # (B, N, Tk, Hk)
                ops.swapaxes(value_heads, 1, 2),  # (B, N, Tk, Hv)
                mask=mask4,
                dropout=self.dropout,
                training=dropout_active,
                seed=self.seed_generator,
                scale=scale,
                return_attention_scores=True,
            )
            attended = ops.swapaxes(attended, 1, 2)  # (B, Tq, N, Hv)
        else:
            scores = None
            attended = ops.dot_product_attention(
                query_heads, key_heads, value_heads, mask=mask4, scale=scale
            )  # (B, Tq, N, Hv)
            if mask is not None:
                # A query whose keys are all masked attends to nothing: output 0, as in
                # `scaled_dot_product_attention` (the fused kernel would average instead).
                any_key = ops.any(mask, axis=-1)  # (B|1, Tq|1)
                any_key = ops.cast(any_key, attended.dtype)[:, :, None, None]  # (B|1, Tq|1, 1, 1)
                attended = attended * any_key
        output = _merge_heads(self.output_dense, attended)  # (B, Tq, D)
        return (output, scores) if return_attention_scores else output

    def _call_grouped(
        self,
        group_size: int,
        query,
        value,
        key,
        query_mask,
        value_mask,
        key_mask,
        attention_mask,
        return_attention_scores: bool,
        training,
        use_causal_mask: bool,
        cache,
        cache_update_index,
        append_to_cache: bool,
    ):
        """`call` with `group_size` consecutive query rows per row of keys and values: each
        group's rows attend as one row of `group_size * query_len` queries (a sentence's
        hypotheses over its encoder output), then are split back into their rows."""
        check_positive_int("query_group_size", group_size)
        if use_causal_mask or cache_update_index is not None or append_to_cache:
            raise ValueError(
                "query_group_size is for attention over shared keys and values (cross-"
                f"attention); got query_group_size={group_size} with use_causal_mask="
                f"{use_causal_mask}, cache_update_index={cache_update_index}, "
                f"append_to_cache={append_to_cache}"
            )
        rows = query.shape[0]
        if rows is not None and rows % group_size:
            raise ValueError(
                f"query must have a multiple of query_group_size={group_size} rows; got "
                f"query.shape={tuple(query.shape)}"
            )
        shape = ops.shape(query)
        groups, length = shape[0] // group_size, shape[1]

        def grouped(x):  # (B * G, T, ...) -> (B, G * T, ...)
            if x is None:
                return None
            return ops.reshape(x, (groups, group_size * length, *ops.shape(x)[2:]))

        result = self.call(
            grouped(query),
            value,
            key,
            query_mask=grouped(query_mask),
            value_mask=value_mask,
            key_mask=key_mask,
            attention_mask=grouped(attention_mask),
            return_attention_scores=return_attention_scores,
            training=training,
            cache=cache,
        )
        output, scores = result if return_attention_scores else (result, None)
        output = ops.reshape(output, (shape[0], length, ops.shape(output)[-1]))  # (B * G, T, D)
        if not return_attention_scores:
            return output
        _, heads, _, key_length = ops.shape(scores)  # (B, N, G * T, S)
        scores = ops.reshape(scores, (groups, heads, group_size, length, key_length))
        scores = ops.transpose(scores, (0, 2, 1, 3, 4))  # (B, G, N, T, S)
        return output, ops.reshape(scores, (shape[0], heads, length, key_length))

    def _call_with_cache(
        self,
        query,
        key,
        value,
        query_heads,
        query_mask,
        value_mask,
        key_mask,
        attention_mask,
        use_causal_mask: bool,
        cache,
        cache_update_index,
        append_to_cache: bool,
        return_attention_scores: bool,
        training,
    ):
        """`call` over a key/value cache `(2, B, N, S, H)`: incremental decoding (with
        `cache_update_index`) or attention over keys/values projected once (without)."""
        if cache_update_index is not None:
            new = _key_value_cache(
                self._heads(self.key_dense, key), self._heads(self.value_dense, value)
            )  # (2, B, N, Tq, H)
            if append_to_cache:
                cache = ops.concatenate([cache, ops.cast(new, cache.dtype)], axis=3)
            else:
                cache = write_positions(cache, cache_update_index, new, axis=3)  # (2, B, N, S, H)
        key_heads, value_heads = ops.unstack(cache, 2, axis=0)  # (B, N, S, H): no copies
        # In incremental decoding the keys are the cache; padding masks of this call's keys
        # do not describe it, so they are not applied. Over a projected cache, the value's.
        key_padding = None
        if cache_update_index is None:
            key_padding = masks.merge_masks(value_mask, key_mask)
        padding = masks.attention_mask_from_padding(query_mask, key_padding)
        mask = self._attention_mask(
            query,
            ops.shape(key_heads)[2],
            padding,
            attention_mask,
            use_causal_mask,
            cache_update_index,
            cache_all_written=append_to_cache,
        )
        dropout_active = bool(training) and self.dropout > 0
        attended, scores = scaled_dot_product_attention(
            ops.swapaxes(query_heads, 1, 2),  # (B, N, Tq, H): small, unlike the cache
            key_heads,
            value_heads,
            mask=None if mask is None else mask[:, None],  # (B, 1, Tq, S)
            dropout=self.dropout,
            training=dropout_active,
            seed=self.seed_generator,
            scale=self._logit_scale(),
            return_attention_scores=True,
        )  # (B, N, Tq, H)
        output = _merge_heads(self.output_dense, ops.swapaxes(attended, 1, 2))  # (B, Tq, D)
        results = (output, cache) if cache_update_index is not None else (output,)
        if return_attention_scores:
            results += (scores,)
        return results[0] if len(results) == 1 else results

    def _logit_scale(self) -> float:
        """The multiplier of the logits: `scale`, or the paper's `1 / sqrt(d_k)`."""
        return self.scale if self.scale is not None else 1.0 / math.sqrt(self.head_key_dim)

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        return (*tuple(query_shape[:-1]), self.output_shape or query_shape[-1])

    def compute_output_spec(self, query, value, key=None, **kwargs):
        shape = self.compute_output_shape(query.shape, value.shape)
        return output_spec(self, shape, (query, value, key), kwargs)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "value_dim": self.value_dim,
                "dropout": self.dropout,
                "use_bias": self.use_bias,
                "output_shape": self.output_shape,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": keras.regularizers.serialize(self.bias_regularizer),
                "kernel_constraint": keras.constraints.serialize(self.kernel_constraint),
                "bias_constraint": keras.constraints.serialize(self.bias_constraint),
                "attention_axes": self.attention_axes,
                "seed": self.seed,
                "scale": self.scale,
            }
        )
        return config


def _check_ranks(query_shape, value_shape, key_shape=None) -> None:
    """Raises a `ValueError` naming the input that is not `(batch, length, depth)`."""
    for name, shape in (("query", query_shape), ("value", value_shape), ("key", key_shape)):
        if shape is not None and len(shape) != 3:
            raise ValueError(
                f"{name} must have shape (batch, length, depth); got {name}.shape={tuple(shape)}"
            )


# The projections are `Dense` layers on the flattened heads, called as layers (so that LoRA,
# every quantization mode, regularizers and constraints are Keras's own): kernels
# `(d, heads * head_dim)` and `(heads * head_dim, d_out)`, each one 2-D matmul. Not
# `EinsumDense` with kernels `(d, heads, head_dim)` as in `keras.layers.MultiHeadAttention`:
# on TensorFlow the gradient of an einsum kernel is computed per example then summed, while a
# matmul's is one large matmul. Weights saved in that older layout load through
# `layers.legacy_weights`.


def _key_value_cache(keys, values):
    """Keys and values `(B, T, heads, head_dim)` as a cache `(2, B, heads, T, head_dim)`."""
    return ops.stack([ops.swapaxes(keys, 1, 2), ops.swapaxes(values, 1, 2)], axis=0)


def _merge_heads(dense: keras.layers.Dense, x):
    """`(B, T, heads, head_dim) -> (B, T, d_out)`: the heads flattened, then `dense`."""
    shape = ops.shape(x)
    flat = ops.reshape(x, (shape[0], shape[1], x.shape[2] * x.shape[3]))  # (B, T, N * H)
    return dense(flat)  # (B, T, D)


def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


def _output_size(output_shape):
    """`output_shape` as an int (`keras.layers.MultiHeadAttention` also takes a 1-tuple)."""
    if isinstance(output_shape, (list, tuple)):
        if len(output_shape) != 1:
            raise ValueError(
                "output_shape must be an int (the output's last dimension) or a 1-tuple; got "
                f"output_shape={output_shape}"
            )
        return output_shape[0]
    return output_shape
