"""Greedy search over a model of the decoding protocol (`decoding.protocol`), Section 6.1's
simplest baseline: the most likely token at each step.

Written with `keras.ops` only (`ops.while_loop`, fixed-size buffers written with
`write_positions`): no Python loop over tensors, so it traces into one graph (one
`tf.function`, which is how the translator exports, with only ops that TF Serving runs).
Output tokens have shape `(batch, max_output_length)`: the generated tokens without BOS,
ending with EOS, then padding.
"""

from keras import ops

from keras_attention.decoding.constraints import DEFAULT_EXTRA_LENGTH
from keras_attention.decoding.row_loop import decode_rows


def greedy_search(
    model,
    source_ids,
    max_length: int | None = None,
    extra_length: int = DEFAULT_EXTRA_LENGTH,
    use_cache: bool = True,
    drop_finished: bool = True,
):
    """Greedy decoding: the most likely token at each step, with the caches.

    Args:
        model: a `DecodingModel` (`decoding.protocol`), e.g. a `Transformer`.
        source_ids: int `(batch, S)` source ids ending with EOS, padded with 0.
        max_length: optional cap on the generated length (EOS included).
        extra_length: a sentence may generate up to `source length + extra_length` tokens.
        use_cache: decode one token a step with key/value caches (`False` recomputes the
            whole prefix every step; same result, for comparison).
        drop_finished: once half of the sentences still decoding have ended, go on with the
            others only, in a smaller batch (`decoding.staged_loop`; same result; not under JAX).

    Returns:
        `(tokens, scores)`: int32 `(batch, L)` and the float32 sum of log-probabilities.

    Example:

    >>> from keras_attention import Transformer
    >>> model = Transformer.from_preset("tiny", vocabulary_size=100)  # untrained
    >>> model.build()
    >>> source_ids = np.array([[17, 42, 9, 3], [25, 3, 0, 0]])  # ending with EOS (3), padded
    >>> tokens, scores = greedy_search(model, source_ids, max_length=6)
    >>> keras.ops.shape(tokens), keras.ops.shape(scores)
    ((2, 6), (2,))
    """
    source_ids = ops.convert_to_tensor(source_ids, "int32")
    rows = ops.shape(source_ids)[0]

    def pick(log_probs, step, keys):
        return ops.argmax(log_probs, axis=-1)

    tokens, scores = decode_rows(
        model,
        source_ids,
        1,
        pick,
        ops.zeros((rows,), "int32"),
        max_length,
        extra_length,
        use_cache,
        drop_finished,
    )
    return tokens[:, 0], scores[:, 0]
