"""What both searches apply to every step: the length limits, the tokens never generated,
the EOS forced at a sentence's limit, and the paper's length penalty; and how both start
(`start_search`: the limits checked and worked out, the model's first state).

Conventions: the ids of `keras_attention.core.special_tokens` (0 padding, 2 BOS, 3 EOS).
PAD and BOS are never generated; at a sentence's length limit EOS is forced.
"""

from keras import ops

from keras_attention.core.checks import check_int_at_least, check_positive_int
from keras_attention.core.special_tokens import BOS_ID, EOS_ID, PAD_ID

# The paper: maximum output length = input length + 50.
DEFAULT_EXTRA_LENGTH = 50
NEG_INF = -1e9
# The least log-probability of an EOS forced at the length limit: a model that gives EOS no
# probability (or less than this) still ends there, with a finite score.
FORCED_EOS_FLOOR = -1e4


def length_penalty(length, alpha: float):
    """`((5 + length) / 6) ** alpha` (Wu et al., 2016), the paper's beam-search penalty."""
    return ops.power((5.0 + ops.cast(length, "float32")) / 6.0, alpha)


def check_lengths(max_length, extra_length) -> None:
    """Raises `ValueError` naming `max_length` or `extra_length` when it is not valid."""
    check_positive_int("max_length", max_length, allow_none=True)
    check_int_at_least("extra_length", extra_length, 0)


def output_limits(source_ids, extra_length: int, max_length: int | None):
    """Per sentence, the most tokens it may generate (EOS included), at least 1; and their
    maximum. (A row of padding only, with `extra_length=0`, would otherwise get 0, which no
    step reaches: its EOS would never be forced.)"""
    source_lengths = ops.sum(ops.cast(ops.not_equal(source_ids, PAD_ID), "int32"), axis=1)
    limits = ops.maximum(source_lengths + extra_length, 1)  # (B,)
    if max_length is not None:
        limits = ops.minimum(limits, max_length)
    return limits, ops.max(limits)


def start_search(
    model,
    source_ids,
    copies: int,
    max_length: int | None,
    extra_length: int,
    use_cache: bool,
) -> tuple:
    """The set-up both searches share, after checking `max_length` and `extra_length`.

    Args:
        model: a `DecodingModel` (`decoding.protocol`).
        source_ids: int `(batch, S)` source ids ending with EOS, padded with 0.
        copies: hypotheses per sentence (1 for greedy search, the beam size for beam search).
        max_length: optional cap on the generated length (EOS included).
        extra_length: a sentence may generate up to `source length + extra_length` tokens.
        use_cache: decode one token a step with key/value caches (the search's argument,
            passed to `start_decoding`).

    Returns:
        `(batch, limits, length, state)`: the number of sentences, each sentence's limit
        `(batch,)` and their maximum (see `output_limits`), and the model's first state
        (`start_decoding`) for `copies` hypotheses of each sentence.
    """
    check_lengths(max_length, extra_length)
    source_ids = ops.convert_to_tensor(source_ids, "int32")
    limits, length = output_limits(source_ids, extra_length, max_length)
    state = model.start_decoding(source_ids, copies, length, use_cache)
    return ops.shape(source_ids)[0], limits, length, state


def first_tokens(rows, length):
    """The token buffer `(rows, length + 1)`: BOS, then room for `length` tokens."""
    return ops.concatenate(
        [ops.full((rows, 1), BOS_ID, "int32"), ops.zeros((rows, length), "int32")], axis=1
    )


def restrict(log_probs, step, limits):
    """PAD and BOS are never generated; at a sentence's last allowed step only EOS may follow.

    A forced EOS keeps its log-probability, floored at `FORCED_EOS_FLOOR` so that it stays
    the only choice even when the model gives it (almost) none. One pass over the
    `(N, V)` log-probabilities at most steps (two more at a step where a row reaches its
    limit): this runs on every hypothesis at every step.
    """
    ids = ops.arange(ops.shape(log_probs)[-1])  # (V,)
    never = ops.logical_or(ops.equal(ids, PAD_ID), ops.equal(ids, BOS_ID))
    log_probs = log_probs + ops.where(never, NEG_INF, 0.0)[None, :]
    at_limit = ops.equal(step + 1, limits)  # (N,)

    def only_eos():
        eos = ops.maximum(log_probs[:, EOS_ID], FORCED_EOS_FLOOR)  # (N,)
        forced = ops.where(ops.equal(ids, EOS_ID)[None, :], eos[:, None], NEG_INF)
        return ops.where(at_limit[:, None], forced, log_probs)

    return ops.cond(ops.any(at_limit), only_eos, lambda: log_probs)
