"""Greedy and beam search over `Transformer.decode` with key/value caches (Section 6.1).

Both searches are written with `keras.ops` only (`ops.while_loop`, fixed-size buffers written
with `write_positions`, a `slice_update` that TensorFlow does not lower to an XLA-only op): no
Python loop over tensors, so they trace into one graph (for example one `tf.function`, which
is how the translator exports, with only ops that TF Serving runs).

Our own rather than keras-hub's `BeamSampler`/`GreedySampler`: those have no length penalty
(the paper's alpha; `BeamSampler(num_beams, return_all_beams)` is all it takes), no per-sentence
length limit, and import keras-hub, which loads TensorFlow and tensorflow-text under any backend.

Conventions: the ids of `keras_attention.core.special_tokens` (0 padding, 2 BOS, 3 EOS).
Output tokens have shape `(batch, max_output_length)`: the generated tokens
without BOS, ending with EOS, then padding. PAD and BOS are never generated; at a sentence's
length limit EOS is forced.
"""

import keras
from keras import ops

from keras_attention.core.checks import check_int_at_least, check_positive_int
from keras_attention.core.sequence_buffer import write_positions
from keras_attention.core.special_tokens import BOS_ID, EOS_ID, PAD_ID
from keras_attention.decoding.grouped_take import take_along_rows, take_in_groups
from keras_attention.decoding.staged_loop import DEFAULT_STAGES, staged_while_loop, take_sentences
from keras_attention.decoding.wide_top_k import wide_top_k

# The paper: maximum output length = input length + 50.
DEFAULT_EXTRA_LENGTH = 50
_NEG_INF = -1e9
# The least log-probability of an EOS forced at the length limit: a model that gives EOS no
# probability (or less than this) still ends there, with a finite score.
_FORCED_EOS_FLOOR = -1e4


def length_penalty(length, alpha: float):
    """`((5 + length) / 6) ** alpha` (Wu et al., 2016), the paper's beam-search penalty."""
    return ops.power((5.0 + ops.cast(length, "float32")) / 6.0, alpha)


def _source_lengths(source_ids):
    return ops.sum(ops.cast(ops.not_equal(source_ids, PAD_ID), "int32"), axis=1)  # (B,)


def _check_lengths(max_length, extra_length) -> None:
    """Raises `ValueError` naming `max_length` or `extra_length` when it is not valid."""
    check_positive_int("max_length", max_length, allow_none=True)
    check_int_at_least("extra_length", extra_length, 0)


def _output_limits(source_ids, extra_length: int, max_length: int | None):
    """Per sentence, the most tokens it may generate (EOS included); and their maximum."""
    limits = _source_lengths(source_ids) + extra_length  # (B,)
    if max_length is not None:
        limits = ops.minimum(limits, max_length)
    return limits, ops.max(limits)


def _next_log_probs(model, tokens, step, state):
    """Log-probabilities of the token after position `step`.

    With caches (`state[2]` non-empty) only the token at `step` goes through the decoder and
    the self-attention caches are updated; without, the whole prefix `tokens[:, :step + 1]`
    is decoded again (the TensorFlow tutorial's way), for comparison.

    Args:
        tokens: `(N, L + 1)` buffer whose column `step` holds the last token.
        step: scalar int, the position being fed to the decoder.
        state: `(encoder_outputs, source_mask, caches, cross_caches)`; empty lists when
            decoding without caches.

    Returns:
        `(log_probs (N, V), new_caches)`.
    """
    encoded, source_mask, caches, cross = state
    rows = ops.shape(tokens)[0]
    if not caches:
        if keras.backend.backend() == "jax":
            # JAX traces the loop with static shapes, so no growing prefix: the whole buffer
            # is decoded; under the causal mask position `step` gets the prefix's logits.
            prefix = tokens  # (N, L + 1)
        else:
            prefix = ops.slice(tokens, [0, 0], [rows, step + 1])  # (N, step + 1)
        logits = model.decode(prefix, encoded, source_mask)  # (N, step + 1 or L + 1, V)
        last = ops.take(logits, step, axis=1)  # (N, V)
        return ops.log_softmax(ops.cast(last, "float32"), axis=-1), caches
    last = ops.slice(tokens, [0, step], [rows, 1])  # (N, 1)
    logits, caches = model.decode(
        last,
        encoded,
        source_mask,
        start_index=step,
        self_attention_cache=caches,
        cross_attention_cache=cross,
        append_to_cache=_grow_caches(),
    )  # (N, 1, V)
    return ops.log_softmax(ops.cast(logits[:, 0], "float32"), axis=-1), caches


def _grow_caches() -> bool:
    """Whether the self-attention caches grow by one position a step (`append_to_cache`).

    Growing, a step copies and attends over the positions written so far; a fixed buffer
    sized to the longest allowed output (source + 50) costs that whole size at every step,
    several times more on real sentences, which end long before their limit. JAX needs
    static shapes in a loop, so there the caches are fixed buffers (written in place by XLA).
    """
    return keras.backend.backend() != "jax"


def _prepare(model, source_ids, copies: int, length, use_cache: bool):
    """Encodes once and makes empty caches for `copies` hypotheses per sentence.

    With caches, the `copies` hypotheses of a sentence share its encoder output and its
    cross-attention keys and values (one row per sentence: the decoder blocks attend with a
    sentence's hypotheses as one row of queries); without, they are repeated per hypothesis.
    """
    if not model.built:
        raise ValueError(
            f"model {model.name} is not built: call model.build() (or the model on a batch) "
            "before decoding with it"
        )
    encoded, source_mask = model.encode(source_ids)  # (B, S, D), (B, S)
    if not use_cache:
        if copies > 1:
            encoded = ops.repeat(encoded, copies, axis=0)  # (B*K, S, D)
            source_mask = ops.repeat(source_mask, copies, axis=0)
        return encoded, source_mask, [], []
    cross = model.decoder.compute_cross_attention_cache(encoded)  # (2, B, N, S, H) each
    batch = ops.shape(encoded)[0] * copies
    # Growing caches start empty; `length * 0`, not 0, so that the loop sees a length that
    # is not known when tracing (a `tf.while_loop` refuses a variable whose static shape
    # changes between iterations).
    caches = model.decoder.initial_cache(batch, length * 0 if _grow_caches() else length)
    return encoded, source_mask, caches, cross


def _take_decoder_state(
    rows, caches, encoded, source_mask, cross, copies: int, source_copies: int
) -> tuple:
    """The decoder state of the sentences `rows` only (`decoding.staged_loop`): the
    self-attention caches (`copies` hypotheses a sentence), the encoder output and its mask
    (`source_copies` rows a sentence) and the cross-attention caches (one row a sentence)."""
    take = take_sentences
    return (
        [take(c, rows, copies, axis=1) for c in caches],  # (2, B*K, ...)
        take(encoded, rows, source_copies),
        take(source_mask, rows, source_copies),
        [take(c, rows, axis=1) for c in cross],  # (2, B, ...)
    )


def _restrict(log_probs, step, limits):
    """PAD and BOS are never generated; at a sentence's last allowed step only EOS may follow.

    A forced EOS keeps its log-probability, floored at `_FORCED_EOS_FLOOR` so that it stays
    the only choice even when the model gives it (almost) none. One pass over the
    `(N, V)` log-probabilities at most steps (two more at a step where a row reaches its
    limit): this runs on every hypothesis at every step.
    """
    ids = ops.arange(ops.shape(log_probs)[-1])  # (V,)
    never = ops.logical_or(ops.equal(ids, PAD_ID), ops.equal(ids, BOS_ID))
    log_probs = log_probs + ops.where(never, _NEG_INF, 0.0)[None, :]
    at_limit = ops.equal(step + 1, limits)  # (N,)

    def only_eos():
        eos = ops.maximum(log_probs[:, EOS_ID], _FORCED_EOS_FLOOR)  # (N,)
        forced = ops.where(ops.equal(ids, EOS_ID)[None, :], eos[:, None], _NEG_INF)
        return ops.where(at_limit[:, None], forced, log_probs)

    return ops.cond(ops.any(at_limit), only_eos, lambda: log_probs)


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
        model: a `Transformer`.
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
    _check_lengths(max_length, extra_length)
    source_ids = ops.convert_to_tensor(source_ids, "int32")
    limits, length = _output_limits(source_ids, extra_length, max_length)
    encoded, source_mask, caches, cross = _prepare(model, source_ids, 1, length, use_cache)
    batch = ops.shape(source_ids)[0]
    tokens = ops.concatenate(
        [ops.full((batch, 1), BOS_ID, "int32"), ops.zeros((batch, length), "int32")], axis=1
    )  # (B, L + 1)
    scores = ops.zeros((batch,), "float32")
    finished = ops.zeros((batch,), "bool")

    def cond(step, tokens, scores, finished, caches, context):
        return ops.logical_and(step < length, ops.logical_not(ops.all(finished)))

    def body(step, tokens, scores, finished, caches, context):
        encoded, source_mask, cross, limits = context
        log_probs, caches = _next_log_probs(
            model, tokens, step, (encoded, source_mask, caches, cross)
        )
        log_probs = _restrict(log_probs, step, limits)
        best = ops.cast(ops.argmax(log_probs, axis=-1), "int32")  # (B,)
        best_score = ops.max(log_probs, axis=-1)
        token = ops.where(finished, PAD_ID, best)
        scores = scores + ops.where(finished, 0.0, best_score)
        tokens = write_positions(tokens, step + 1, token[:, None])
        finished = ops.logical_or(finished, ops.equal(token, EOS_ID))
        return step + 1, tokens, scores, finished, caches, context

    def take_rows(variables, rows):
        step, tokens, scores, finished, caches, (encoded, source_mask, cross, limits) = variables
        caches, encoded, source_mask, cross = _take_decoder_state(
            rows, caches, encoded, source_mask, cross, 1, 1
        )
        take = take_sentences
        return (
            step,
            take(tokens, rows),
            take(scores, rows),
            take(finished, rows),
            caches,
            (encoded, source_mask, cross, take(limits, rows)),
        )

    zero = ops.convert_to_tensor(0, "int32")
    tokens, scores = staged_while_loop(
        cond,
        body,
        (zero, tokens, scores, finished, caches, (encoded, source_mask, cross, limits)),
        rows_done=lambda variables: variables[3],
        take_rows=take_rows,
        finish=lambda variables: (variables[1], variables[2]),
        stages=DEFAULT_STAGES if drop_finished else 1,
    )
    return tokens[:, 1:], scores


def _sentences_done(alive_scores, done_scores):
    """`(B,)`: whether each sentence has `K` finished hypotheses, or no live one left."""
    full = ops.all(done_scores > _NEG_INF / 2, axis=1)
    no_live = ops.all(alive_scores <= _NEG_INF / 2, axis=1)
    return ops.logical_or(full, no_live)


def beam_search(
    model,
    source_ids,
    beam_size: int = 4,
    alpha: float = 0.6,
    max_length: int | None = None,
    extra_length: int = DEFAULT_EXTRA_LENGTH,
    use_cache: bool = True,
    drop_finished: bool = True,
):
    """Beam search with length penalty, Section 6.1 (beam 4, alpha 0.6), batched, with caches.

    Keeps `beam_size` live hypotheses and the `beam_size` best finished ones per sentence.
    Each step ranks the `2 * beam_size` best continuations: an EOS among the first
    `beam_size` finishes a hypothesis, scored `log P / ((5 + length) / 6)^alpha` (length
    counts EOS); the best non-EOS ones stay live (fairseq's rule, so that beam size 1 is
    greedy search). A sentence is done once it has `beam_size` finished hypotheses (its
    result then stays as it is, so that a sentence gets the same result in any batch as
    alone); the search stops early when every sentence is done, else at the longest length
    limit.

    Args:
        model: a `Transformer`.
        source_ids: int `(batch, S)` source ids ending with EOS, padded with 0.
        beam_size: hypotheses kept per sentence (`k`).
        alpha: length-penalty exponent.
        max_length: optional cap on the generated length (EOS included).
        extra_length: a sentence may generate up to `source length + extra_length` tokens.
        use_cache: decode one token a step with key/value caches (`False` recomputes the
            whole prefix every step; same result, for comparison).
        drop_finished: once half of the sentences still decoding are done, go on with the
            others only, in a smaller batch (`decoding.staged_loop`; same result; not under JAX).

    Returns:
        `(tokens, scores)`: the best hypothesis per sentence, int32 `(batch, L)`, and its
        length-penalised score (float32).

    Example:

    >>> from keras_attention import Transformer
    >>> model = Transformer.from_preset("tiny", vocabulary_size=100)  # untrained
    >>> model.build()
    >>> source_ids = np.array([[17, 42, 9, 3], [25, 3, 0, 0]])  # ending with EOS (3), padded
    >>> tokens, scores = beam_search(model, source_ids, beam_size=4, alpha=0.6, max_length=6)
    >>> keras.ops.shape(tokens), keras.ops.shape(scores)
    ((2, 6), (2,))
    """
    check_positive_int("beam_size", beam_size)
    _check_lengths(max_length, extra_length)
    source_ids = ops.convert_to_tensor(source_ids, "int32")
    beams = beam_size
    limits, length = _output_limits(source_ids, extra_length, max_length)
    batch = ops.shape(source_ids)[0]
    encoded, source_mask, caches, cross = _prepare(model, source_ids, beams, length, use_cache)
    beam_limits = ops.repeat(limits, beams, axis=0)  # (B*K,)
    alive = ops.concatenate(
        [
            ops.full((batch * beams, 1), BOS_ID, "int32"),
            ops.zeros((batch * beams, length), "int32"),
        ],
        axis=1,
    )  # (B*K, L + 1)
    # Only the first copy of each sentence is live at the start, so the K beams differ.
    first_only = ops.where(ops.arange(beams) == 0, 0.0, _NEG_INF)
    alive_scores = ops.tile(first_only[None, :], (batch, 1))  # (B, K) log P
    done_tokens = ops.zeros((batch, beams, length + 1), "int32")
    done_scores = ops.full((batch, beams), _NEG_INF, "float32")  # normalised
    best_penalty = length_penalty(limits, alpha)  # (B,): a live hypothesis' final penalty
    context = (encoded, source_mask, cross, beam_limits, best_penalty)
    source_copies = 1 if use_cache else beams  # rows of the encoder output per sentence

    def cond(step, alive, alive_scores, done_tokens, done_scores, caches, context):
        sentence_done = _sentences_done(alive_scores, done_scores)
        return ops.logical_and(step < length, ops.logical_not(ops.all(sentence_done)))

    def body(step, alive, alive_scores, done_tokens, done_scores, caches, context):
        encoded, source_mask, cross, beam_limits, _ = context
        batch = ops.shape(alive_scores)[0]
        # A done sentence keeps its finished hypotheses while the others go on, so that it
        # gets the same result in any batch as alone.
        sentence_done = _sentences_done(alive_scores, done_scores)[:, None]  # (B, 1)
        old_tokens, old_scores = done_tokens, done_scores
        log_probs, caches = _next_log_probs(
            model, alive, step, (encoded, source_mask, caches, cross)
        )
        log_probs = _restrict(log_probs, step, beam_limits)
        vocab = ops.shape(log_probs)[-1]
        candidates = alive_scores[:, :, None] + ops.reshape(log_probs, (batch, beams, -1))
        # The width spelt out: with `-1` a traced graph would not know it (the batch is not).
        candidates = ops.reshape(candidates, (batch, beams * vocab))
        scores, flat = wide_top_k(candidates, 2 * beams)  # (B, 2K)
        origin = ops.cast(flat // vocab, "int32")  # (B, 2K): which live hypothesis
        token = ops.cast(flat % vocab, "int32")
        grown = take_in_groups(alive, origin, beams)  # (B*2K, L + 1)
        grown = write_positions(grown, step + 1, ops.reshape(token, (-1, 1)))
        ends = ops.logical_or(ops.equal(token, EOS_ID), scores <= _NEG_INF / 2)

        # Live: the best K candidates that did not end.
        live_scores, keep = ops.top_k(ops.where(ends, _NEG_INF, scores), beams)  # (B, K)
        keep = ops.cast(keep, "int32")
        alive = take_in_groups(grown, keep, 2 * beams)
        parents = take_along_rows(origin, keep)  # (B, K)
        caches = [take_in_groups(c, parents, beams, axis=1) for c in caches]

        # Finished: merge those that ended now (length-penalised) with the earlier ones.
        # As in fairseq, only an EOS among the K best candidates finishes a hypothesis (so
        # that beam size 1 is greedy search); the next K candidates only refill the live set.
        in_top_k = ops.arange(2 * beams)[None, :] < beams
        ended = ops.where(
            ops.logical_and(
                ops.logical_and(ops.equal(token, EOS_ID), in_top_k), scores > _NEG_INF / 2
            ),
            scores / length_penalty(step + 1, alpha),
            _NEG_INF,
        )  # (B, 2K)
        pool_scores = ops.concatenate([done_scores, ended], axis=1)  # (B, 3K)
        pool_tokens = ops.concatenate(
            [done_tokens, ops.reshape(grown, (batch, 2 * beams, -1))], axis=1
        )  # (B, 3K, L + 1)
        done_scores, best = ops.top_k(pool_scores, beams)
        done_tokens = take_along_rows(pool_tokens, best)  # (B, K, L + 1)
        done_scores = ops.where(sentence_done, old_scores, done_scores)
        done_tokens = ops.where(sentence_done[:, :, None], old_tokens, done_tokens)
        return step + 1, alive, live_scores, done_tokens, done_scores, caches, context

    def take_rows(variables, rows):
        step, alive, alive_scores, done_tokens, done_scores, caches, context = variables
        encoded, source_mask, cross, beam_limits, best_penalty = context
        caches, encoded, source_mask, cross = _take_decoder_state(
            rows, caches, encoded, source_mask, cross, beams, source_copies
        )
        take = take_sentences
        return (
            step,
            take(alive, rows, beams),
            take(alive_scores, rows),
            take(done_tokens, rows),
            take(done_scores, rows),
            caches,
            (
                encoded,
                source_mask,
                cross,
                take(beam_limits, rows, beams),
                take(best_penalty, rows),
            ),
        )

    def finish(variables):
        """Each sentence's best finished hypothesis, or its best live one if none finished."""
        _, alive, alive_scores, done_tokens, done_scores, _, context = variables
        batch = ops.shape(alive_scores)[0]
        has_done = done_scores[:, 0] > _NEG_INF / 2
        # The width spelt out: `-1` is ambiguous when no sentence is left (batch 0).
        live_best = ops.reshape(alive, (batch, beams, ops.shape(alive)[-1]))[:, 0]
        live_score = alive_scores[:, 0] / context[-1]
        tokens = ops.where(has_done[:, None], done_tokens[:, 0], live_best)
        return tokens, ops.where(has_done, done_scores[:, 0], live_score)

    zero = ops.convert_to_tensor(0, "int32")
    tokens, scores = staged_while_loop(
        cond,
        body,
        (zero, alive, alive_scores, done_tokens, done_scores, caches, context),
        rows_done=lambda variables: _sentences_done(variables[2], variables[4]),
        take_rows=take_rows,
        finish=finish,
        stages=DEFAULT_STAGES if drop_finished else 1,
    )
    return tokens[:, 1:], scores
