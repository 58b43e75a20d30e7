"""Quick guards of the beam search's rules (issue 53, point 12), each against a bug that only
slow tests caught before: the length penalty, the cache reordered with each sentence's row
offset, and a hypothesis finished only by an EOS among the `K` best candidates. And (point
13) every sentence ends with a finished hypothesis, within its limit, even a row of padding
only: the search has no other result to give.

The model is a lookup table, not a network: `TableModel` implements the decoding protocol
with next-token probabilities that depend only on the previous token and on the sentence's
table, so every search costs a fraction of a second and the expected result and its
log-probability are worked out by hand, in float64. Like a cached decoder, it reads its
sentence's table from its *state* (a row of state per hypothesis, which the search must
reorder as it reorders the hypotheses), not from the tokens it is given.
"""

import math

import numpy as np
from keras import ops

from keras_attention.core.special_tokens import BOS_ID, EOS_ID, PAD_ID
from keras_attention.decoding import beam_search, greedy_search
from keras_attention.decoding.constraints import NEG_INF
from tests.conftest import to_numpy
from tests.tolerances import assert_close

VOCABULARY_SIZE = 12  # PAD, UNK, BOS, EOS and the words 4..11
FIRST_TABLE_TOKEN = 4  # a source `[4 + t, EOS]` decodes with table `t`

Table = tuple[dict[int, dict[int, float]], dict[int, float]]  # (rows by previous token, default)


class TableModel:
    """The decoding protocol over next-token tables: sentence `b`, whose source starts with
    token `4 + t`, takes its log-probabilities from table `t` (`tables[t][previous token]`).
    The state is the table number of each hypothesis' row."""

    def __init__(self, *tables: Table):
        log_tables = np.full((len(tables), VOCABULARY_SIZE, VOCABULARY_SIZE), -np.inf)
        for number, (rows, default) in enumerate(tables):
            for previous in range(VOCABULARY_SIZE):
                for token, probability in rows.get(previous, default).items():
                    log_tables[number, previous, token] = math.log(probability)
        self.log_tables = log_tables.reshape(-1, VOCABULARY_SIZE).astype("float32")

    def start_decoding(self, source_ids, copies: int = 1, max_length=None, use_cache=True):
        del max_length, use_cache
        # (A row of padding only decodes with table 0.)
        tables = ops.maximum(ops.cast(source_ids[:, 0], "int32") - FIRST_TABLE_TOKEN, 0)  # (B,)
        return ops.repeat(tables, copies, axis=0)  # (B * copies,)

    def decode_step(self, state, tokens, index, copies: int = 1):
        del copies
        previous = ops.cast(ops.take(tokens, index, axis=1), "int32")  # (N,)
        rows = state * VOCABULARY_SIZE + previous
        return ops.take(ops.convert_to_tensor(self.log_tables), rows, axis=0), state

    def reorder_state(self, state, rows):
        return ops.take(state, rows, axis=0)

    def select_sentences(self, state, sentences, copies: int = 1):
        rows = sentences[:, None] * copies + ops.arange(copies, dtype="int32")[None, :]
        return ops.take(state, ops.reshape(rows, (-1,)), axis=0)


def path_log_prob(table: Table, path: list[int]) -> float:
    """The float64 log-probability of generating `path` (EOS included) from BOS."""
    rows, default = table
    total, previous = 0.0, BOS_ID
    for token in path:
        total += math.log(rows.get(previous, default)[token])
        previous = token
    return total


def penalty(length: int, alpha: float) -> float:
    """The paper's length penalty `((5 + length) / 6) ** alpha`, in float64."""
    return ((5.0 + length) / 6.0) ** alpha


def assert_result(tokens, scores, row: int, path: list[int], score: float) -> None:
    """Row `row` of a search's result is `path` then padding, scored `score`."""
    tokens, scores = to_numpy(tokens), to_numpy(scores)
    np.testing.assert_array_equal(tokens[row, : len(path)], path)
    assert np.all(tokens[row, len(path) :] == PAD_ID), tokens[row]
    assert_close(scores[row], score)


# Beam 2. Step 0: [4] (0.8), [6] (0.2) live. Step 1: [4, EOS] (0.4) finishes; [4, 5] (0.36)
# and [6, 8] (0.2) stay live. Step 2: [4, 5, EOS] (0.36) finishes, the second: the sentence
# is done with a short hypothesis (2 tokens, p 0.4) and a long one (3 tokens, p 0.36).
# Without a penalty (alpha 0) the short one wins; with alpha 2 the long one, by about 0.1 in
# score: (7/6)^2 and (8/6)^2 divide log 0.4 and log 0.36 into -0.673 and -0.575.
SHORT_OR_LONG: Table = (
    {
        BOS_ID: {4: 0.8, 6: 0.2},
        4: {EOS_ID: 0.5, 5: 0.45, 7: 0.05},
        5: {EOS_ID: 1.0},
        6: {8: 1.0},
        8: {9: 0.7, EOS_ID: 0.3},
    },
    {EOS_ID: 0.9, 10: 0.1},
)


def test_the_length_penalty_picks_among_the_finished_hypotheses():
    sources = np.array([[FIRST_TABLE_TOKEN, EOS_ID]], dtype="int32")
    model = TableModel(SHORT_OR_LONG)
    short, long = [4, EOS_ID], [4, 5, EOS_ID]
    for alpha, best in ((0.0, short), (2.0, long)):
        tokens, scores = beam_search(model, sources, beam_size=2, alpha=alpha, max_length=6)
        expected = path_log_prob(SHORT_OR_LONG, best) / penalty(len(best), alpha)
        assert_result(tokens, scores, 0, best, expected)


# Two sentences that decode with different tables (beam 2): sentence 1's rows are rows 2 and
# 3, so a step that reorders its state must take rows `2 + parent`. Taken without the offset,
# its hypotheses would read sentence 0's table (rows 0 and 1) from step 1 on.
FIRST: Table = (
    {BOS_ID: {4: 0.6, 5: 0.4}, 4: {5: 0.7, EOS_ID: 0.3}, 5: {EOS_ID: 0.9, 4: 0.1}},
    {EOS_ID: 0.5, 7: 0.5},
)
SECOND: Table = (
    {BOS_ID: {6: 0.7, 7: 0.3}, 6: {8: 0.9, EOS_ID: 0.1}, 7: {EOS_ID: 0.9, 9: 0.1}},
    {EOS_ID: 0.95, 9: 0.05},
)


def test_each_sentences_state_is_reordered_within_its_own_rows():
    model = TableModel(FIRST, SECOND)
    sources = np.array(
        [[FIRST_TABLE_TOKEN, EOS_ID], [FIRST_TABLE_TOKEN + 1, EOS_ID]], dtype="int32"
    )
    # Alone, found by hand: [4, 5, EOS] (p 0.378) beats [5, EOS] (0.36); [6, 8, EOS]
    # (0.5985) beats [7, EOS] (0.27).
    best = {0: (FIRST, [4, 5, EOS_ID]), 1: (SECOND, [6, 8, EOS_ID])}
    for drop_finished in (True, False):
        tokens, scores = beam_search(
            model, sources, beam_size=2, alpha=0.0, max_length=5, drop_finished=drop_finished
        )
        for row, (table, path) in best.items():
            assert_result(tokens, scores, row, path, path_log_prob(table, path))


# Beam 2, alpha 0, at most 3 tokens. Step 0: [EOS] (0.2) is the third candidate, behind [4]
# (0.5) and [5] (0.3): not among the 2 best, it must not finish. Step 1: [4, EOS] (0.05) and
# [5, EOS] (0.03) are the third and fourth candidates: neither finishes. Step 2 is the limit:
# [4, 6, EOS] (0.45 x 0.3 = 0.135) and [5, 7, EOS] (0.081) finish, and [4, 6, EOS] is the
# result. Had the third candidate [EOS] finished, it (0.2) would have won.
EOS_BEHIND: Table = (
    {
        BOS_ID: {4: 0.5, 5: 0.3, EOS_ID: 0.2},
        4: {6: 0.9, EOS_ID: 0.1},
        5: {7: 0.9, EOS_ID: 0.1},
        6: {8: 0.7, EOS_ID: 0.3},
        7: {9: 0.7, EOS_ID: 0.3},
    },
    {EOS_ID: 0.5, 10: 0.5},
)


def test_only_an_eos_among_the_k_best_candidates_finishes_a_hypothesis():
    sources = np.array([[FIRST_TABLE_TOKEN, EOS_ID]], dtype="int32")
    tokens, scores = beam_search(
        TableModel(EOS_BEHIND), sources, beam_size=2, alpha=0.0, max_length=3
    )
    best = [4, 6, EOS_ID]
    assert_result(tokens, scores, 0, best, path_log_prob(EOS_BEHIND, best))


def test_a_row_of_padding_only_ends_at_once():
    """With `extra_length=0` a row without tokens may generate at most 1 token (its limit
    is at least 1): EOS, forced at the first step, while the other rows go on."""
    model = TableModel(EOS_BEHIND)
    sources = np.array([[FIRST_TABLE_TOKEN, 5, EOS_ID], [PAD_ID] * 3], dtype="int32")
    empty = path_log_prob(EOS_BEHIND, [EOS_ID])
    for search in (greedy_search, beam_search):
        options = {} if search is greedy_search else {"beam_size": 2, "alpha": 0.6}
        tokens, scores = search(model, sources, extra_length=0, **options)
        assert to_numpy(tokens).shape == (2, 3)
        assert_result(tokens, scores, 1, [EOS_ID], empty / penalty(1, options.get("alpha", 0)))


def test_every_sentence_ends_with_a_finished_hypothesis_within_its_limit():
    """Random tables, sentences of 1 to 4 tokens, every beam size up to 4 and limits down
    to 1 token: each result ends with EOS within its limit, with a finite score (a sentence
    left without a finished hypothesis would give an empty row scored `NEG_INF`)."""
    rng = np.random.default_rng(0)
    tables = []
    for _ in range(3):
        probabilities = rng.dirichlet(np.ones(VOCABULARY_SIZE - 2), size=VOCABULARY_SIZE)
        rows = {
            previous: dict(zip([1, *range(3, VOCABULARY_SIZE)], row.tolist(), strict=True))
            for previous, row in enumerate(probabilities)
        }
        tables.append((rows, rows[0]))
    model = TableModel(*tables)
    sources = np.array(
        [[4, EOS_ID, 0, 0], [5, 8, EOS_ID, 0], [6, 9, 9, EOS_ID], [EOS_ID, 0, 0, 0]], "int32"
    )
    limits = (sources != PAD_ID).sum(axis=1) + 1
    for beam_size in (1, 4):
        tokens, scores = beam_search(model, sources, beam_size=beam_size, extra_length=1)
        tokens, scores = to_numpy(tokens), to_numpy(scores)
        assert np.all(scores > NEG_INF / 2), scores
        for row, limit in zip(tokens, limits, strict=True):
            ends = np.flatnonzero(row == EOS_ID)
            assert ends.size == 1 and ends[0] < limit, (row, limit)
