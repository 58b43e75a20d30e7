"""Greedy and beam search (Section 6.1) over `Transformer.decode` with key/value caches.

Two kinds of models:

- `EosTransformer`: a tiny random `Transformer` whose EOS logit gets `eos_offset + eos_slope *
  position`, so that sentences end at various lengths (a positive slope) or never (an offset
  of -inf, so that EOS is only there because the search forces it at the length limit).
- `TableTransformer`: a `Transformer` whose `decode` looks the next-token probabilities up in
  a table indexed by the previous token (and the source length), so that the best sequence
  and its log-probability can be worked out by hand.
"""

import functools
import math

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention.core.special_tokens import BOS_ID, EOS_ID, PAD_ID
from keras_attention.decoding import (
    DEFAULT_EXTRA_LENGTH,
    beam_search,
    greedy_search,
    length_penalty,
)
from keras_attention.models import Transformer
from tests.conftest import to_numpy
from tests.layers.numpy_reference import randomize_weights
from tests.tolerances import assert_clear_winner, assert_close

# Tests that count the model's Python-side calls per step: on JAX `ops.while_loop` traces its
# body once (that the JAX search gives the same tokens is checked by every other test).
COUNTS_MODEL_CALLS = pytest.mark.skipif(
    keras.backend.backend() == "jax",
    reason="JAX traces the loop body once, so Python-side calls are not counted per step",
)

VOCABULARY_SIZE = 24
# Tiny sizes: every model runs on 2 shared CPU cores.
SIZE = dict(
    num_encoder_layers=1,
    num_decoder_layers=2,
    d_model=16,
    num_heads=2,
    intermediate_dim=32,
    dropout=0.0,
    tie_output_embeddings=False,
)
# Three sentences of different lengths (3, 5 and 2 tokens, EOS included), padded with 0.
SOURCES = np.array([[5, 9, 3, 0, 0], [4, 8, 6, 7, 3], [10, 3, 0, 0, 0]], dtype="int32")
SOURCE_LENGTHS = (SOURCES != PAD_ID).sum(axis=1)
EXTRA_LENGTH = 4
# Seed 1 (untied output) ranks PAD first at the first step: the search must not emit it.
PAD_LOVING_SEED = 1
# Three random models under TensorFlow; the other backends run the same `keras.ops` code, so
# they check it on the seed that ranks PAD first (under JAX each model compiles its loops
# afresh: every seed costs seconds a test).
SEEDS = (0, 1, 2) if keras.backend.backend() == "tensorflow" else (PAD_LOVING_SEED,)
SEARCHES = ("greedy", "beam")


class ControlledTransformer(Transformer):
    """A `Transformer` whose `decode` (same signature, caches passed on) returns logits changed
    by `change_logits` (given `encoder_group_size`, the rows per source sentence); `calls`
    records, for every call, the number of target positions and whether a self-attention
    cache was given; `rows`, the number of rows (hypotheses)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.calls = []
        self.rows = []

    def decode(
        self,
        target_ids,
        encoder_outputs,
        source_padding_mask=None,
        start_index=0,
        self_attention_cache=None,
        cross_attention_cache=None,
        append_to_cache=False,
        encoder_group_size=1,
        training=None,
    ):
        self.calls.append((target_ids.shape[1], self_attention_cache is not None))
        self.rows.append(target_ids.shape[0])
        result = super().decode(
            target_ids,
            encoder_outputs,
            source_padding_mask,
            start_index=start_index,
            self_attention_cache=self_attention_cache,
            cross_attention_cache=cross_attention_cache,
            append_to_cache=append_to_cache,
            encoder_group_size=encoder_group_size,
            training=training,
        )
        logits, caches = (result, None) if self_attention_cache is None else result
        logits = self.change_logits(
            logits, target_ids, source_padding_mask, start_index, encoder_group_size
        )
        return logits if caches is None else (logits, caches)

    def change_logits(self, logits, target_ids, source_padding_mask, start_index, group_size):
        raise NotImplementedError


class EosTransformer(ControlledTransformer):
    """Its EOS logit gets `eos_offset + eos_slope * position` (position 1 for the first
    generated token): a model that learns to stop, or (offset -inf) never does."""

    def __init__(self, eos_offset: float = 0.0, eos_slope: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.eos_offset = eos_offset
        self.eos_slope = eos_slope

    def change_logits(self, logits, target_ids, source_padding_mask, start_index, group_size):
        positions = ops.arange(ops.shape(target_ids)[1], dtype="int32") + start_index + 1
        bias = self.eos_offset + self.eos_slope * ops.cast(positions, "float32")  # (T,)
        is_eos = ops.equal(ops.arange(self.output_vocabulary_size), EOS_ID)  # (V,)
        return ops.where(is_eos[None, None, :], logits + bias[None, :, None], logits)


class TableTransformer(ControlledTransformer):
    """Its logits are `log tables[n % len(tables), previous token]`, n being the source
    length: the next-token probabilities depend only on the previous token (and the source
    length), whatever the network computes."""

    def __init__(self, tables: np.ndarray, **kwargs):
        # The network's logits are replaced: one decoder layer is enough (and cheaper a step).
        super().__init__(
            vocabulary_size=tables.shape[-1], **{**SIZE, "num_decoder_layers": 1, **kwargs}
        )
        with np.errstate(divide="ignore"):
            self.log_table = np.log(tables).reshape(-1, tables.shape[-1]).astype("float32")
        self.num_tables = tables.shape[0]

    def change_logits(self, logits, target_ids, source_padding_mask, start_index, group_size):
        lengths = ops.sum(ops.cast(source_padding_mask, "int32"), axis=1)  # (B,)
        # A beam's hypotheses share their sentence's mask: B rows for N = B * K.
        lengths = ops.repeat(lengths, group_size, axis=0)  # (N,)
        table = (lengths % self.num_tables)[:, None] * self.vocabulary_size  # (N, 1)
        rows = table + ops.cast(target_ids, "int32")  # (N, T)
        return ops.take(ops.convert_to_tensor(self.log_table), rows, axis=0)  # (N, T, V)


# Next-token probabilities of the table models, `{previous token: {token: probability}}`; the
# previous tokens not listed use `DEFAULT_ROW`. Ids 4..11 are words.
TABLE_VOCABULARY_SIZE = 12
DEFAULT_ROW = {EOS_ID: 0.6, 4: 0.4}
# Greedy takes 5 (p 0.5) and then has only poor continuations; 6 (p 0.4) is followed by EOS
# almost surely, which beam search finds.
MYOPIC = {
    BOS_ID: {5: 0.5, 6: 0.4, 4: 0.1},
    5: {7: 0.3, 8: 0.25, 9: 0.2, 4: 0.15, EOS_ID: 0.1},
    6: {EOS_ID: 0.95, 4: 0.05},
    7: {EOS_ID: 0.9, 4: 0.1},
}
MYOPIC_GREEDY, MYOPIC_BEST = [5, 7, EOS_ID], [6, EOS_ID]
# Every hypothesis ends at the second step: the search must stop there.
EARLY_END = {BOS_ID: {4: 0.5, 5: 0.3, 6: 0.2}, 4: {EOS_ID: 0.9, 7: 0.1}}
EARLY_END_DEFAULT = {EOS_ID: 0.8, 7: 0.2}
# With beam 2 and alpha 0.6, two hypotheses end at the second step ([5, EOS] and [4, EOS]),
# which finishes the sentence; the live [4, 6] would go on to [4, 6, 8, 9, EOS], whose
# length-penalised score is better, if the search did not stop.
LATE_BETTER = {
    BOS_ID: {4: 0.6, 5: 0.4},
    4: {EOS_ID: 0.5, 6: 0.45, 7: 0.05},
    5: {EOS_ID: 0.8, 7: 0.2},
    6: {8: 0.999, EOS_ID: 0.001},
    8: {9: 0.999, EOS_ID: 0.001},
    9: {EOS_ID: 0.999, 4: 0.001},
}
# Rarely ends: EOS (p 1e-4) stays far below the two words, so the limit ends the sentence.
RARELY_ENDS = {}
RARELY_ENDS_DEFAULT = {10: 0.9, 11: 0.0999, EOS_ID: 1e-4}


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


@functools.cache
def eos_model(seed: int, eos_offset: float = 0.0, eos_slope: float = 0.5) -> EosTransformer:
    """A tiny random `EosTransformer` (built once per arguments; decoding does not change it)."""
    model = EosTransformer(
        eos_offset=eos_offset, eos_slope=eos_slope, vocabulary_size=VOCABULARY_SIZE, **SIZE
    )
    model((SOURCES, SOURCES))
    randomize_weights(model, seed)
    return model


@functools.cache
def eos_search(kind: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`search(kind, eos_model(seed), SOURCES, extra_length=EXTRA_LENGTH)` with the search's
    defaults, computed once: several tests check properties of this same result."""
    tokens, scores = search(kind, eos_model(seed), SOURCES, extra_length=EXTRA_LENGTH)
    tokens.flags.writeable = scores.flags.writeable = False
    return tokens, scores


def probability_table(rows: dict[int, dict[int, float]], default: dict[int, float]) -> np.ndarray:
    """The `(V, V)` next-token probabilities: row `p` from `rows[p]`, else from `default`."""
    table = np.zeros((TABLE_VOCABULARY_SIZE, TABLE_VOCABULARY_SIZE))
    for previous in range(TABLE_VOCABULARY_SIZE):
        for token, probability in rows.get(previous, default).items():
            table[previous, token] = probability
    np.testing.assert_allclose(table.sum(axis=1), 1.0)
    return table


def table_model(*tables: tuple[dict[int, dict[int, float]], dict[int, float]]) -> TableTransformer:
    """A built `TableTransformer` from `(rows, default)` pairs (one per source length mod n)."""
    model = TableTransformer(np.stack([probability_table(*table) for table in tables]))
    model((SOURCES, SOURCES))
    model.calls.clear()
    return model


def path_log_prob(rows: dict[int, dict[int, float]], default: dict[int, float], path) -> float:
    """The log-probability of generating `path` (EOS included) from BOS, in Python floats."""
    total, previous = 0.0, BOS_ID
    for token in path:
        total += math.log(rows.get(previous, default)[token])
        previous = token
    return total


def run_search(kind: str, model: Transformer, sources, **kwargs) -> tuple:
    """Greedy search, or beam search (beam 3 unless given): the `(tokens, scores)` tensors."""
    if kind == "greedy":
        return greedy_search(model, sources, **kwargs)
    return beam_search(model, sources, **{"beam_size": 3, **kwargs})


def search(
    kind: str, model: Transformer, sources: np.ndarray, **kwargs
) -> tuple[np.ndarray, np.ndarray]:
    """`run_search` as NumPy `(tokens, scores)`."""
    tokens, scores = run_search(kind, model, sources, **kwargs)
    return to_numpy(tokens), to_numpy(scores)


def output_lengths(tokens: np.ndarray) -> np.ndarray:
    """Generated tokens per row, EOS included (the position of the first EOS, plus 1)."""
    return np.argmax(tokens == EOS_ID, axis=1) + 1


def assert_well_formed(tokens: np.ndarray, limits: np.ndarray) -> None:
    """Each row: words (no PAD, no BOS), one EOS within the row's limit, then padding only;
    the buffer is as wide as the largest limit."""
    assert tokens.dtype == np.int32
    assert tokens.shape == (len(limits), max(limits))
    for row, limit in zip(tokens, limits, strict=True):
        ends = np.flatnonzero(row == EOS_ID)
        assert ends.size == 1, f"not exactly one EOS in {row}"
        assert ends[0] < limit, f"{row} is longer than its limit {limit}"
        assert not np.isin(row[: ends[0]], [PAD_ID, BOS_ID]).any(), f"PAD or BOS in {row}"
        assert np.all(row[ends[0] + 1 :] == PAD_ID), f"not padding after EOS in {row}"


def penalty(length: np.ndarray, alpha: float) -> np.ndarray:
    """The length penalty `((5 + length) / 6) ** alpha`, in float64."""
    return ((5.0 + np.asarray(length, dtype=np.float64)) / 6.0) ** alpha


def teacher_forced_step_log_probs(
    model: Transformer, sources: np.ndarray, tokens: np.ndarray
) -> np.ndarray:
    """The float64 next-token log-probabilities `(B, L, V)` at every position of `tokens`,
    from one teacher-forced call `model((sources, [BOS] + tokens[:-1]))`."""
    target_in = np.concatenate([np.full((len(tokens), 1), BOS_ID), tokens[:, :-1]], axis=1)
    logits = to_numpy(model((sources, target_in.astype("int32")))).astype(np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def teacher_forced_log_probs(
    model: Transformer, sources: np.ndarray, tokens: np.ndarray
) -> np.ndarray:
    """Sum of the float64 log-probabilities of `tokens` up to their EOS (see
    `teacher_forced_step_log_probs`)."""
    log_probs = teacher_forced_step_log_probs(model, sources, tokens)
    chosen = np.take_along_axis(log_probs, tokens[:, :, None].astype(np.int64), axis=-1)[..., 0]
    generated = np.arange(tokens.shape[1])[None, :] < output_lengths(tokens)[:, None]
    return np.where(generated, chosen, 0.0).sum(axis=1)


def assert_same_result(
    actual: tuple[np.ndarray, np.ndarray], expected: tuple[np.ndarray, np.ndarray]
) -> None:
    """The same tokens, and scores within float32 rounding."""
    np.testing.assert_array_equal(actual[0], expected[0])
    assert_close(actual[1], expected[1])


# ---------------------------------------------------------------------------------------------
# Length penalty
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
def test_length_penalty_is_the_paper_formula(alpha: float):
    lengths = np.arange(1, 60, dtype="int32")
    assert_close(length_penalty(lengths, alpha), penalty(lengths, alpha))
    assert_close(length_penalty(7, alpha), (12 / 6) ** alpha)


# ---------------------------------------------------------------------------------------------
# Scores, caches and the equivalences between the searches
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_the_greedy_paths_have_no_near_tie(seed: int):
    """The tests that compare the tokens of two computations (cached and not, a batch and one
    sentence, beam size 1 and greedy) need each greedy step's best token clearly ahead of the
    next, so that another CPU's rounding cannot flip it."""
    tokens, _ = eos_search("greedy", seed)
    log_probs = teacher_forced_step_log_probs(eos_model(seed), SOURCES, tokens)
    log_probs[..., [PAD_ID, BOS_ID]] = -np.inf  # never generated
    limits = SOURCE_LENGTHS + EXTRA_LENGTH
    for row, (length, limit) in enumerate(zip(output_lengths(tokens), limits, strict=True)):
        steps = min(length, limit - 1)  # EOS is forced at the limit, not chosen
        assert_clear_winner(log_probs[row, :steps], what=f"sentence {row}'s steps")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", SEARCHES)
def test_cached_and_uncached_decoding_agree(kind: str, seed: int):
    cached = eos_search(kind, seed)  # use_cache=True, the default
    uncached = search(kind, eos_model(seed), SOURCES, extra_length=EXTRA_LENGTH, use_cache=False)
    assert_same_result(cached, uncached)


@COUNTS_MODEL_CALLS
@pytest.mark.parametrize("use_cache", [True, False])
def test_cached_search_feeds_one_token_a_step_and_projects_the_source_once(
    use_cache: bool, monkeypatch: pytest.MonkeyPatch
):
    model = table_model((MYOPIC, DEFAULT_ROW))
    projections = []
    project = model.decoder.compute_cross_attention_cache

    def counting_projection(encoder_sequence):
        projections.append(encoder_sequence.shape)
        return project(encoder_sequence)

    monkeypatch.setattr(model.decoder, "compute_cross_attention_cache", counting_projection)
    tokens, _ = search("greedy", model, SOURCES[:1], use_cache=use_cache)
    steps = len(MYOPIC_GREEDY)
    np.testing.assert_array_equal(tokens[0, :steps], MYOPIC_GREEDY)
    if use_cache:
        assert len(projections) == 1
        assert model.calls == [(1, True)] * steps
    else:
        assert projections == []
        assert model.calls == [(step + 1, False) for step in range(steps)]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_beam_size_one_is_greedy_search(alpha: float, seed: int):
    greedy_tokens, greedy_scores = eos_search("greedy", seed)
    beam_tokens, beam_scores = search(
        "beam", eos_model(seed), SOURCES, beam_size=1, alpha=alpha, extra_length=EXTRA_LENGTH
    )
    np.testing.assert_array_equal(beam_tokens, greedy_tokens)
    expected = greedy_scores / penalty(output_lengths(greedy_tokens), alpha)
    assert_close(beam_scores, expected)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("kind", "alpha"), [("greedy", 0.0), ("beam", 0.0), ("beam", 0.6)])
def test_scores_are_the_teacher_forced_log_probabilities(kind: str, alpha: float, seed: int):
    model = eos_model(seed)
    if kind == "greedy" or alpha == 0.6:  # beam_search's default alpha
        tokens, scores = eos_search(kind, seed)
    else:
        tokens, scores = search(kind, model, SOURCES, extra_length=EXTRA_LENGTH, alpha=alpha)
    assert scores.dtype == np.float32
    expected = teacher_forced_log_probs(model, SOURCES, tokens)
    if kind == "beam":
        expected = expected / penalty(output_lengths(tokens), alpha)
    assert_close(scores, expected)


@pytest.mark.parametrize("beam_size", [2, 3])
def test_beam_search_finds_what_greedy_search_misses(beam_size: int):
    greedy_score = path_log_prob(MYOPIC, DEFAULT_ROW, MYOPIC_GREEDY)
    best_score = path_log_prob(MYOPIC, DEFAULT_ROW, MYOPIC_BEST)
    assert best_score > greedy_score  # the set-up: greedy's first choice is a trap
    model = table_model((MYOPIC, DEFAULT_ROW))
    sources = SOURCES[:1]

    tokens, scores = search("greedy", model, sources)
    np.testing.assert_array_equal(tokens[0, :3], MYOPIC_GREEDY)
    assert_close(scores[0], greedy_score)

    tokens, scores = search("beam", model, sources, beam_size=beam_size, alpha=0.0)
    np.testing.assert_array_equal(tokens[0, :2], MYOPIC_BEST)
    assert_close(scores[0], best_score)
    assert_well_formed(tokens, SOURCE_LENGTHS[:1] + DEFAULT_EXTRA_LENGTH)


# ---------------------------------------------------------------------------------------------
# EOS, padding and the length limits
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", SEARCHES)
def test_outputs_end_with_one_eos_then_padding(kind: str, seed: int):
    """Words, one EOS, padding; never PAD or BOS as a word (seed 1's model ranks PAD first)."""
    tokens, _ = eos_search(kind, seed)
    assert_well_formed(tokens, SOURCE_LENGTHS + EXTRA_LENGTH)


@pytest.mark.parametrize("max_length", [None, 6, 1])
@pytest.mark.parametrize("kind", SEARCHES)
def test_eos_is_forced_at_the_length_limit(kind: str, max_length: int | None):
    """A model that never emits EOS ends every sentence exactly at its limit:
    `min(source length + extra_length, max_length)`."""
    model = eos_model(0, eos_offset=-np.inf, eos_slope=0.0)
    extra_length = 3
    tokens, scores = search(kind, model, SOURCES, extra_length=extra_length, max_length=max_length)
    limits = SOURCE_LENGTHS + extra_length
    if max_length is not None:
        limits = np.minimum(limits, max_length)
    assert_well_formed(tokens, limits)
    np.testing.assert_array_equal(output_lengths(tokens), limits)
    assert scores.shape == (len(SOURCES),)


@pytest.mark.parametrize("kind", SEARCHES)
def test_default_limit_is_source_length_plus_50(kind: str):
    """The paper's limit, with the table model that rarely ends."""
    model = table_model((RARELY_ENDS, RARELY_ENDS_DEFAULT))
    tokens, _ = search(kind, model, SOURCES[:, :3])
    limits = (SOURCES[:, :3] != PAD_ID).sum(axis=1) + 50
    assert_well_formed(tokens, limits)
    np.testing.assert_array_equal(output_lengths(tokens), limits)


@COUNTS_MODEL_CALLS
@pytest.mark.parametrize("use_cache", [True, False])
@pytest.mark.parametrize(
    ("kind", "beam_size"), [("greedy", None), ("beam", 1), ("beam", 2), ("beam", 3)]
)
def test_search_stops_once_every_hypothesis_has_ended(
    kind: str, beam_size: int | None, use_cache: bool
):
    """Every hypothesis ends at the second step, so the model is called twice, not 50 times."""
    model = table_model((EARLY_END, EARLY_END_DEFAULT))
    options = {} if beam_size is None else {"beam_size": beam_size}
    tokens, _ = search(kind, model, SOURCES, use_cache=use_cache, **options)
    assert_well_formed(tokens, SOURCE_LENGTHS + DEFAULT_EXTRA_LENGTH)
    np.testing.assert_array_equal(tokens[:, :2], [[4, EOS_ID]] * len(SOURCES))
    assert len(model.calls) == 2


# ---------------------------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", SEARCHES)
def test_a_batch_gives_what_each_sentence_gives_alone(kind: str, seed: int):
    model = eos_model(seed)
    batch_tokens, batch_scores = eos_search(kind, seed)
    for index, length in enumerate(SOURCE_LENGTHS):
        alone = search(kind, model, SOURCES[index : index + 1, :length], extra_length=EXTRA_LENGTH)
        width = alone[0].shape[1]
        assert width == length + EXTRA_LENGTH
        assert_same_result((batch_tokens[index : index + 1, :width], batch_scores[index]), alone)
        assert np.all(batch_tokens[index, width:] == PAD_ID)


def test_a_finished_sentence_is_not_changed_by_the_longer_ones():
    """Sentence 0 (source length 2: table `LATE_BETTER`) is finished after two steps, while
    sentence 1 (length 3: `RARELY_ENDS`) goes on to its limit; sentence 0's result must not
    depend on it. `extra_length` 4 leaves room for `LATE_BETTER`'s longer path (5 tokens),
    and sentence 1 goes on for 5 steps after sentence 0 is finished."""
    model = table_model((LATE_BETTER, DEFAULT_ROW), (RARELY_ENDS, RARELY_ENDS_DEFAULT))
    sources = np.array([[4, EOS_ID, 0], [4, 5, EOS_ID]], dtype="int32")
    options = dict(beam_size=2, alpha=0.6, extra_length=4)
    alone = search("beam", model, sources[:1, :2], **options)
    best = [5, EOS_ID]
    np.testing.assert_array_equal(alone[0][0, :2], best)
    expected = path_log_prob(LATE_BETTER, DEFAULT_ROW, best) / penalty(len(best), 0.6)
    assert_close(alone[1][0], expected)
    tokens, scores = search("beam", model, sources, **options)
    assert output_lengths(tokens)[1] == 3 + 4  # sentence 1 went on to its limit
    width = alone[0].shape[1]
    assert_same_result((tokens[:1, :width], scores[:1]), alone)


# Eight sentences of 2 to 9 tokens (EOS included), whose limits (length + 4) end them at
# different steps.
MANY_SOURCES = np.array(
    [[*np.random.default_rng(n).integers(4, VOCABULARY_SIZE, n - 1), EOS_ID, *[0] * (9 - n)]
     for n in (5, 2, 9, 3, 7, 4, 8, 6)],
    dtype="int32",
)  # fmt: skip


@pytest.mark.parametrize("use_cache", [True, False])
@pytest.mark.parametrize("kind", SEARCHES)
def test_dropping_finished_sentences_changes_no_result(kind: str, use_cache: bool):
    model = eos_model(0, eos_slope=0.3)
    options = dict(extra_length=EXTRA_LENGTH, use_cache=use_cache)
    model.rows.clear()
    whole = search(kind, model, MANY_SOURCES, drop_finished=False, **options)
    whole_rows = list(model.rows)
    model.rows.clear()
    dropped = search(kind, model, MANY_SOURCES, **options)
    dropped_rows = list(model.rows)
    assert_same_result(dropped, whole)
    hypotheses = len(MANY_SOURCES) * (1 if kind == "greedy" else 3)
    if keras.backend.backend() != "jax":  # JAX traces the body once, and never drops rows
        assert set(whole_rows) == {hypotheses}
        # Steps after the first sentences are done decode fewer rows, and fewer in all.
        assert dropped_rows[0] == hypotheses
        assert min(dropped_rows) < hypotheses
        assert sum(dropped_rows) < sum(whole_rows)


# ---------------------------------------------------------------------------------------------
# One graph
# ---------------------------------------------------------------------------------------------


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="tf.function tracing is TensorFlow's; on torch ops.while_loop is a Python loop",
)
@pytest.mark.parametrize("kind", SEARCHES)
def test_search_traces_into_one_tf_function(kind: str):
    import tensorflow as tf

    model = eos_model(2)
    traced = tf.function(
        lambda sources: run_search(kind, model, sources, extra_length=EXTRA_LENGTH),
        input_signature=[tf.TensorSpec([None, None], tf.int32)],
    )
    graph_ops = {op.type for op in traced.get_concrete_function().graph.get_operations()}
    assert graph_ops & {"While", "StatelessWhile"}
    for sources in (SOURCES, SOURCES[[2, 0], :3]):
        graph_result = tuple(to_numpy(x) for x in traced(sources))
        eager_result = (
            eos_search(kind, 2)
            if sources is SOURCES
            else search(kind, model, sources, extra_length=EXTRA_LENGTH)
        )
        assert_same_result(graph_result, eager_result)
    assert traced.experimental_get_tracing_count() == 1


# ---------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"beam_size": 0}, "beam_size"),
        ({"beam_size": -2}, "beam_size"),
        ({"beam_size": 1.5}, "beam_size"),
        ({"max_length": 0}, "max_length"),
        ({"extra_length": -1}, "extra_length"),
    ],
)
def test_bad_arguments_are_rejected(arguments: dict, name: str):
    model = table_model((MYOPIC, DEFAULT_ROW))
    with pytest.raises(ValueError, match=name):
        beam_search(model, SOURCES, **arguments)
    if name != "beam_size":
        with pytest.raises(ValueError, match=name):
            greedy_search(model, SOURCES, **arguments)


@pytest.mark.parametrize("search", [greedy_search, beam_search])
def test_an_unbuilt_model_is_named(search):
    model = Transformer(
        vocabulary_size=12, num_encoder_layers=1, num_decoder_layers=1, d_model=8,
        num_heads=2, intermediate_dim=16, name="unbuilt",
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"model unbuilt is not built: call model\.build\(\)"):
        search(model, SOURCES)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_n_best_list_is_the_beam_sorted_best_first_with_the_best_hypothesis_on_top(seed):
    model = eos_model(seed, eos_slope=0.3)
    kwargs = dict(beam_size=4, alpha=0.6, extra_length=EXTRA_LENGTH)
    best, best_scores = beam_search(model, SOURCES, **kwargs)
    tokens, scores = beam_search(model, SOURCES, num_hypotheses=4, **kwargs)
    tokens, scores = to_numpy(tokens), to_numpy(scores)
    assert tokens.shape[:2] == (len(SOURCES), 4) and scores.shape == (len(SOURCES), 4)
    np.testing.assert_array_equal(tokens[:, 0], to_numpy(best))
    assert_close(scores[:, 0], best_scores)
    assert np.all(np.diff(scores, axis=1) <= 0), scores  # best first
    for sentence in tokens:  # distinct hypotheses
        assert len({tuple(row) for row in sentence}) == 4
    fewer, fewer_scores = beam_search(model, SOURCES, num_hypotheses=2, **kwargs)
    np.testing.assert_array_equal(to_numpy(fewer), tokens[:, :2])
    assert_close(fewer_scores, scores[:, :2])


@pytest.mark.parametrize("seed", SEEDS)
def test_a_beam_of_one_s_n_best_list_is_greedy_search(seed):
    model = eos_model(seed, eos_slope=0.3)
    greedy, greedy_scores = greedy_search(model, SOURCES, extra_length=EXTRA_LENGTH)
    tokens, scores = beam_search(
        model, SOURCES, beam_size=1, alpha=0.0, extra_length=EXTRA_LENGTH, num_hypotheses=1
    )
    np.testing.assert_array_equal(to_numpy(tokens)[:, 0], to_numpy(greedy))
    assert_close(to_numpy(scores)[:, 0], greedy_scores)


def test_an_n_best_list_longer_than_the_beam_is_refused():
    model = eos_model(0)
    with pytest.raises(ValueError, match="num_hypotheses must be at most beam_size=2"):
        beam_search(model, SOURCES, beam_size=2, num_hypotheses=3)
