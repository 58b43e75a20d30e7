"""Beam search over a model of the decoding protocol (`decoding.protocol`), Section 6.1.

Our own rather than keras-hub's `BeamSampler`: that has no length penalty (the paper's
alpha), no per-sentence length limit, and imports keras-hub, which loads TensorFlow and
tensorflow-text under any backend. Written with `keras.ops` only, so that it traces into one
graph (see `decoding.greedy`).

Shapes: `B` sentences, `K` hypotheses each (`beam_size`), rows `B * K` sentence by sentence,
`V` the vocabulary, `L + 1` the token buffer (BOS first).
"""

from keras import ops

from keras_attention.core.checks import check_positive_int
from keras_attention.core.sequence_buffer import write_positions
from keras_attention.core.special_tokens import EOS_ID
from keras_attention.decoding.constraints import (
    DEFAULT_EXTRA_LENGTH,
    NEG_INF,
    first_tokens,
    length_penalty,
    restrict,
    start_search,
)
from keras_attention.decoding.grouped_take import flat_rows, take_along_rows, take_in_groups
from keras_attention.decoding.staged_loop import DEFAULT_STAGES, staged_while_loop, take_sentences
from keras_attention.decoding.wide_top_k import wide_top_k


def beam_search(
    model,
    source_ids,
    beam_size: int = 4,
    alpha: float = 0.6,
    max_length: int | None = None,
    extra_length: int = DEFAULT_EXTRA_LENGTH,
    use_cache: bool = True,
    drop_finished: bool = True,
    num_hypotheses: int | None = None,
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
        model: a `DecodingModel` (`decoding.protocol`), e.g. a `Transformer`.
        source_ids: int `(batch, S)` source ids ending with EOS, padded with 0.
        beam_size: hypotheses kept per sentence (`k`).
        alpha: length-penalty exponent.
        max_length: optional cap on the generated length (EOS included).
        extra_length: a sentence may generate up to `source length + extra_length` tokens.
        use_cache: decode one token a step with key/value caches (`False` recomputes the
            whole prefix every step; same result, for comparison).
        drop_finished: once half of the sentences still decoding are done, go on with the
            others only, in a smaller batch (`decoding.staged_loop`; same result; not under JAX).
        num_hypotheses: return the `N` best hypotheses of each sentence (the n-best list,
            `1 <= N <= beam_size`), best first, instead of the best one. A sentence's list is
            its finished hypotheses by score, then (only if fewer than `N` finished, which
            happens when the others were cut off by `NEG_INF` scores) its best live ones.

    Returns:
        `(tokens, scores)`: the best hypothesis per sentence, int32 `(batch, L)`, and its
        length-penalised score `log P / ((5 + length) / 6)^alpha` (float32, `(batch,)`);
        with `num_hypotheses=N`, `(batch, N, L)` and `(batch, N)`.

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
    if num_hypotheses is not None:
        check_positive_int("num_hypotheses", num_hypotheses)
        if num_hypotheses > beam_size:
            raise ValueError(
                f"num_hypotheses must be at most beam_size={beam_size}; got "
                f"num_hypotheses={num_hypotheses}"
            )
    beams = beam_size
    batch, limits, length, state = start_search(
        model, source_ids, beams, max_length, extra_length, use_cache
    )
    # Only the first copy of each sentence is live at the start, so the K beams differ.
    first_only = ops.where(ops.arange(beams) == 0, 0.0, NEG_INF)
    variables = (
        ops.convert_to_tensor(0, "int32"),  # step
        first_tokens(batch * beams, length),  # alive (B*K, L + 1)
        ops.tile(first_only[None, :], (batch, 1)),  # alive_scores (B, K): log P
        ops.zeros((batch, beams, length + 1), "int32"),  # done_tokens
        ops.full((batch, beams), NEG_INF, "float32"),  # done_scores: length-penalised
        ops.repeat(limits, beams, axis=0),  # the limit of each hypothesis (B*K,)
        length_penalty(limits, alpha),  # (B,): a live hypothesis' final penalty
        state,
    )

    def cond(step, alive, alive_scores, done_tokens, done_scores, limits, penalty, state):
        done = _sentences_done(alive_scores, done_scores)
        return ops.logical_and(step < length, ops.logical_not(ops.all(done)))

    def body(step, alive, alive_scores, done_tokens, done_scores, limits, penalty, state):
        done_before = _sentences_done(alive_scores, done_scores)[:, None]  # (B, 1)
        log_probs, state = model.decode_step(state, alive, step, beams)
        log_probs = restrict(log_probs, step, limits)
        scores, grown, token, origin = _extend(alive, alive_scores, log_probs, step, beams)
        alive, alive_scores, parents = _keep_live(scores, grown, token, origin, beams)
        state = model.reorder_state(state, flat_rows(parents, beams))
        done_tokens, done_scores = _keep_finished(
            done_tokens, done_scores, done_before, scores, grown, token, step, alpha, beams
        )
        return step + 1, alive, alive_scores, done_tokens, done_scores, limits, penalty, state

    def take_rows(variables, sentences):
        step, alive, alive_scores, done_tokens, done_scores, limits, penalty, state = variables
        per_sentence = (alive_scores, done_tokens, done_scores)
        return (
            step,
            take_sentences(alive, sentences, beams),
            *(take_sentences(tensor, sentences) for tensor in per_sentence),
            take_sentences(limits, sentences, beams),
            take_sentences(penalty, sentences),
            model.select_sentences(state, sentences, beams),
        )

    tokens, scores = staged_while_loop(
        cond,
        body,
        variables,
        rows_done=lambda variables: _sentences_done(variables[2], variables[4]),
        take_rows=take_rows,
        finish=lambda variables: _best_hypotheses(
            *variables[1:5], variables[6], beams, num_hypotheses
        ),
        stages=DEFAULT_STAGES if drop_finished else 1,
    )
    return tokens[..., 1:], scores


def _sentences_done(alive_scores, done_scores):
    """`(B,)`: whether each sentence has `K` finished hypotheses, or no live one left."""
    full = ops.all(done_scores > NEG_INF / 2, axis=1)
    no_live = ops.all(alive_scores <= NEG_INF / 2, axis=1)
    return ops.logical_or(full, no_live)


def _extend(alive, alive_scores, log_probs, step, beams: int) -> tuple:
    """The `2K` best continuations of each sentence's live hypotheses.

    Returns:
        `(scores, grown, token, origin)`: their log P `(B, 2K)`, their tokens
        `(B*2K, L + 1)`, their last token `(B, 2K)` and the live hypothesis each grows
        (`(B, 2K)`, in `[0, K)`).
    """
    batch = ops.shape(alive_scores)[0]
    vocab = ops.shape(log_probs)[-1]
    candidates = alive_scores[:, :, None] + ops.reshape(log_probs, (batch, beams, -1))
    # The width spelt out: with `-1` a traced graph would not know it (the batch is not).
    candidates = ops.reshape(candidates, (batch, beams * vocab))
    scores, flat = wide_top_k(candidates, 2 * beams)  # (B, 2K)
    origin = ops.cast(flat // vocab, "int32")
    token = ops.cast(flat % vocab, "int32")
    grown = take_in_groups(alive, origin, beams)  # (B*2K, L + 1)
    grown = write_positions(grown, step + 1, ops.reshape(token, (-1, 1)))
    return scores, grown, token, origin


def _keep_live(scores, grown, token, origin, beams: int) -> tuple:
    """The best `K` continuations that did not end: `(alive, alive_scores, parents)`, the
    parents `(B, K)` being the live hypotheses they grew from."""
    ends = ops.logical_or(ops.equal(token, EOS_ID), scores <= NEG_INF / 2)
    live_scores, keep = ops.top_k(ops.where(ends, NEG_INF, scores), beams)  # (B, K)
    keep = ops.cast(keep, "int32")
    return take_in_groups(grown, keep, 2 * beams), live_scores, take_along_rows(origin, keep)


def _keep_finished(
    done_tokens, done_scores, done_before, scores, grown, token, step, alpha: float, beams: int
) -> tuple:
    """The `K` best finished hypotheses: those that ended now (length-penalised) merged with
    the earlier ones. As in fairseq, only an EOS among the `K` best candidates finishes a
    hypothesis (so that beam size 1 is greedy search); the next `K` only refill the live set.
    A sentence done before this step (`done_before`, `(B, 1)`) keeps its finished hypotheses
    as they were, so that it gets the same result in any batch as alone."""
    batch = ops.shape(done_scores)[0]
    in_top_k = ops.arange(2 * beams)[None, :] < beams
    ended = ops.logical_and(ops.equal(token, EOS_ID), in_top_k)
    ended = ops.where(
        ops.logical_and(ended, scores > NEG_INF / 2),
        scores / length_penalty(step + 1, alpha),
        NEG_INF,
    )  # (B, 2K)
    pool_scores = ops.concatenate([done_scores, ended], axis=1)  # (B, 3K)
    pool_tokens = ops.concatenate(
        [done_tokens, ops.reshape(grown, (batch, 2 * beams, -1))], axis=1
    )  # (B, 3K, L + 1)
    new_scores, best = ops.top_k(pool_scores, beams)
    new_tokens = take_along_rows(pool_tokens, best)  # (B, K, L + 1)
    return (
        ops.where(done_before[:, :, None], done_tokens, new_tokens),
        ops.where(done_before, done_scores, new_scores),
    )


def _best_hypotheses(
    alive, alive_scores, done_tokens, done_scores, penalty, beams: int, n: int | None = None
):
    """Each sentence's best finished hypothesis; with `n`, its `n` best: the finished ones,
    then live ones if fewer than `n` finished.

    Every sentence has a finished hypothesis by the end: its limit is at least 1
    (`output_limits`), at its last step only EOS may follow (`restrict`, floored at
    `FORCED_EOS_FLOOR`), so its best live hypothesis ends there with a finite score, first of
    the candidates. (There was a branch here for a sentence with none, returning its best live
    hypothesis penalised as if it ended at its limit; no sentence could reach it but one
    whose every continuation the model scores -inf, which is left with no hypothesis at all:
    it now gets the empty output scored `NEG_INF`, rather than a dead candidate's tokens.)"""
    if n is not None:
        return _n_best(alive, alive_scores, done_tokens, done_scores, penalty, beams, n)
    return done_tokens[:, 0], done_scores[:, 0]


def _n_best(alive, alive_scores, done_tokens, done_scores, penalty, beams: int, n: int):
    """`(B, n, L + 1)` tokens and `(B, n)` scores: the finished hypotheses (already sorted,
    best first), followed by the live ones (sorted too) where fewer than `n` finished."""
    batch = ops.shape(alive_scores)[0]
    finished = ops.sum(ops.cast(done_scores > NEG_INF / 2, "int32"), axis=1)  # (B,)
    slots = ops.arange(n, dtype="int32")[None, :]  # (1, n)
    from_done = slots < finished[:, None]  # (B, n)
    live_slot = ops.clip(slots - finished[:, None], 0, beams - 1)
    live = ops.reshape(alive, (batch, beams, ops.shape(alive)[-1]))
    tokens = ops.where(
        from_done[:, :, None],
        done_tokens[:, :n],
        take_along_rows(live, live_slot),
    )
    live_scores = take_along_rows(alive_scores / penalty[:, None], live_slot)
    return tokens, ops.where(from_done, done_scores[:, :n], live_scores)
