"""Decoding: the searches over a model's key/value caches, and the helpers only they use.

- `searches`: `greedy_search` and `beam_search` (length penalty, forced end of sentence);
- `staged_loop`: a search loop that drops its finished rows in stages;
- `wide_top_k`: the exact top-k of wide rows by block maxima (beam search's candidates);
- `grouped_take`: rows taken within groups of rows (a beam's hypotheses) by flat index.

They use only `keras.ops` (backend-agnostic), the model's decoding methods and `core/`.
"""

from keras_attention.decoding.searches import (
    DEFAULT_EXTRA_LENGTH,
    beam_search,
    greedy_search,
    length_penalty,
)

__all__ = ["DEFAULT_EXTRA_LENGTH", "beam_search", "greedy_search", "length_penalty"]
