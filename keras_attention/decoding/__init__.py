"""Decoding: the searches over a model of the decoding protocol, and the helpers only they use.

- `protocol`: `DecodingModel`, the four methods the searches call on a model;
- `greedy`, `beam`, `sampling`: `greedy_search`, `beam_search` (with its n-best list) and
  `sample_search` (temperature, top-k, top-p, seeded);
- `forced`: `forced_scores`, the model's score of given translations (one forward pass);
- `ensemble`: `Ensemble`, several models decoded as one;
- `row_loop`: the loop of the searches that pick a token per row (greedy, sampling);
- `counter_random`: the random numbers of sampling, keyed by seed, step, sentence, token;
- `constraints`: length limits, the length penalty, the tokens never generated, forced EOS;
- `staged_loop`: a search loop that drops its finished rows in stages;
- `wide_top_k`: the exact top-k of wide rows by block maxima (beam search's candidates);
- `grouped_take`: rows taken within groups of rows (a beam's hypotheses) by flat index.

They use only `keras.ops` (backend-agnostic), the protocol's methods and `core/`.
"""

from keras_attention.decoding.beam import beam_search
from keras_attention.decoding.constraints import DEFAULT_EXTRA_LENGTH, length_penalty
from keras_attention.decoding.ensemble import Ensemble
from keras_attention.decoding.forced import forced_scores
from keras_attention.decoding.greedy import greedy_search
from keras_attention.decoding.protocol import DecodingModel
from keras_attention.decoding.sampling import sample_search

__all__ = [
    "DEFAULT_EXTRA_LENGTH",
    "DecodingModel",
    "Ensemble",
    "beam_search",
    "forced_scores",
    "greedy_search",
    "length_penalty",
    "sample_search",
]
