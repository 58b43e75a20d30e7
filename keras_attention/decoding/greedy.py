"""Greedy search over a model of the decoding protocol (`decoding.protocol`), Section 6.1's
simplest baseline: the most likely token at each step.

Written with `keras.ops` only (`ops.while_loop`, fixed-size buffers written with
`write_positions`): no Python loop over tensors, so it traces into one graph (one
`tf.function`, which is how the translator exports, with only ops that TF Serving runs).
Output tokens have shape `(batch, max_output_length)`: the generated tokens without BOS,
ending with EOS, then padding.
"""

from keras import ops

from keras_attention.core.sequence_buffer import write_positions
from keras_attention.core.special_tokens import EOS_ID, PAD_ID
from keras_attention.decoding.constraints import (
    DEFAULT_EXTRA_LENGTH,
    first_tokens,
    restrict,
    start_search,
)
from keras_attention.decoding.staged_loop import DEFAULT_STAGES, staged_while_loop, take_sentences


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
    batch, limits, length, state = start_search(
        model, source_ids, 1, max_length, extra_length, use_cache
    )
    tokens = first_tokens(batch, length)  # (B, L + 1)
    scores = ops.zeros((batch,), "float32")
    finished = ops.zeros((batch,), "bool")

    def cond(step, tokens, scores, finished, limits, state):
        return ops.logical_and(step < length, ops.logical_not(ops.all(finished)))

    def body(step, tokens, scores, finished, limits, state):
        log_probs, state = model.decode_step(state, tokens, step)
        log_probs = restrict(log_probs, step, limits)
        best = ops.cast(ops.argmax(log_probs, axis=-1), "int32")  # (B,)
        token = ops.where(finished, PAD_ID, best)
        scores = scores + ops.where(finished, 0.0, ops.max(log_probs, axis=-1))
        tokens = write_positions(tokens, step + 1, token[:, None])
        finished = ops.logical_or(finished, ops.equal(token, EOS_ID))
        return step + 1, tokens, scores, finished, limits, state

    def take_rows(variables, rows):
        step, *per_sentence, state = variables
        kept = [take_sentences(tensor, rows) for tensor in per_sentence]
        return step, *kept, model.select_sentences(state, rows)

    zero = ops.convert_to_tensor(0, "int32")
    tokens, scores = staged_while_loop(
        cond,
        body,
        (zero, tokens, scores, finished, limits, state),
        rows_done=lambda variables: variables[3],
        take_rows=take_rows,
        finish=lambda variables: (variables[1], variables[2]),
        stages=DEFAULT_STAGES if drop_finished else 1,
    )
    return tokens[:, 1:], scores
