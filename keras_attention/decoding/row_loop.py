"""The loop of the searches that pick one token per row at each step: greedy search and
sampling (`decoding.greedy`, `decoding.sampling`). Beam search, which ranks a sentence's
rows against each other, has its own (`decoding.beam`).

Each sentence has `copies` rows (samples), consecutive; a row ends at its EOS (or its
sentence's length limit), a sentence once all its rows ended, and the finished sentences
leave the loop in stages (`decoding.staged_loop`).
"""

from collections.abc import Callable

from keras import ops

from keras_attention.core.sequence_buffer import write_positions
from keras_attention.core.special_tokens import EOS_ID, PAD_ID
from keras_attention.decoding.constraints import first_tokens, restrict, start_search
from keras_attention.decoding.staged_loop import DEFAULT_STAGES, staged_while_loop, take_sentences


def decode_rows(
    model,
    source_ids,
    copies: int,
    pick: Callable,
    keys,
    max_length: int | None,
    extra_length: int,
    use_cache: bool,
    drop_finished: bool,
) -> tuple:
    """Decodes `copies` rows per sentence, one token a row a step, chosen by `pick`.

    Args:
        model: a `DecodingModel`.
        source_ids: int `(batch, S)` source ids ending with EOS, padded with 0.
        copies: rows per sentence.
        pick: `(log_probs (rows, V), step, keys (rows,)) -> (rows,)` int32 tokens, given the
            restricted log-probabilities (PAD and BOS excluded, EOS forced at the limit).
        keys: int32 `(batch * copies,)`, a number per row that `pick` may use (a random
            stream's key); it follows its row when finished sentences leave the loop.
        max_length: optional cap on the generated length (EOS included).
        extra_length: a sentence may generate up to `source length + extra_length` tokens.
        use_cache: decode one token a step with key/value caches.
        drop_finished: go on without the sentences whose rows have all ended.

    Returns:
        `(tokens, scores)`: int32 `(batch, copies, L)` without BOS, and float32
        `(batch, copies)`, each row's sum of the log-probabilities of its tokens.
    """
    batch, limits, length, state = start_search(
        model, source_ids, copies, max_length, extra_length, use_cache
    )
    rows = batch * copies
    tokens = first_tokens(rows, length)  # (R, L + 1)
    scores = ops.zeros((rows,), "float32")
    finished = ops.zeros((rows,), "bool")
    limits = ops.repeat(limits, copies, axis=0)

    def cond(step, tokens, scores, finished, limits, keys, state):
        return ops.logical_and(step < length, ops.logical_not(ops.all(finished)))

    def body(step, tokens, scores, finished, limits, keys, state):
        log_probs, state = model.decode_step(state, tokens, step, copies)
        log_probs = restrict(log_probs, step, limits)
        chosen = ops.cast(pick(log_probs, step, keys), "int32")  # (R,)
        token = ops.where(finished, PAD_ID, chosen)
        chosen_score = ops.take_along_axis(log_probs, chosen[:, None], axis=1)[:, 0]
        scores = scores + ops.where(finished, 0.0, chosen_score)
        tokens = write_positions(tokens, step + 1, token[:, None])
        finished = ops.logical_or(finished, ops.equal(token, EOS_ID))
        return step + 1, tokens, scores, finished, limits, keys, state

    def sentences_done(variables):
        return ops.all(ops.reshape(variables[3], (-1, copies)), axis=1)  # (B,)

    def take_rows(variables, sentences):
        step, *per_row, state = variables
        kept = [take_sentences(tensor, sentences, copies) for tensor in per_row]
        return step, *kept, model.select_sentences(state, sentences, copies)

    def finish(variables):
        tokens, scores = variables[1], variables[2]
        width = ops.shape(tokens)[-1]
        return ops.reshape(tokens, (-1, copies, width)), ops.reshape(scores, (-1, copies))

    zero = ops.convert_to_tensor(0, "int32")
    keys = ops.cast(keys, "int32")
    tokens, scores = staged_while_loop(
        cond,
        body,
        (zero, tokens, scores, finished, limits, keys, state),
        rows_done=sentences_done,
        take_rows=take_rows,
        finish=finish,
        stages=DEFAULT_STAGES if drop_finished else 1,
    )
    return tokens[:, :, 1:], scores
