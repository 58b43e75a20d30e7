"""Decoding: the searches over a model of the decoding protocol, and the helpers only they use.

- `protocol`: `DecodingModel`, the four methods the searches call on a model;
- `greedy`, `beam`: `greedy_search` and `beam_search`;
- `constraints`: length limits, the length penalty, the tokens never generated, forced EOS;
- `staged_loop`: a search loop that drops its finished rows in stages;
- `wide_top_k`: the exact top-k of wide rows by block maxima (beam search's candidates);
- `grouped_take`: rows taken within groups of rows (a beam's hypotheses) by flat index.

They use only `keras.ops` (backend-agnostic), the protocol's methods and `core/`.
"""

from keras_attention.decoding.beam import beam_search
from keras_attention.decoding.constraints import DEFAULT_EXTRA_LENGTH, length_penalty
from keras_attention.decoding.greedy import greedy_search
from keras_attention.decoding.protocol import DecodingModel

__all__ = [
    "DEFAULT_EXTRA_LENGTH",
    "DecodingModel",
    "beam_search",
    "greedy_search",
    "length_penalty",
]
