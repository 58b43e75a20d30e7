"""The decoding protocol: all that `greedy_search` and `beam_search` ask of a model.

A model that decodes with the searches offers four methods; the searches call nothing else
(`tests/decoding/test_protocol.py` decodes through an object that has only these, and a
decoder-only language model built from the library's layers with the same searches). The
protocol is the peer of keras-hub's `next(prompt, cache, index)` and of fairseq's
`reorder_incremental_state`:

- `start_decoding(source_ids, copies, max_length, use_cache)`: the state for `copies`
  hypotheses of each source sentence (encoder output, empty caches). A model is free to keep
  one row per sentence of what the hypotheses share (the `Transformer` keeps one encoder
  output and one cross-attention cache per sentence).
- `decode_step(state, tokens, index, copies)`: the float32 log-probabilities
  `(rows, vocabulary)` of the token after position `index` of `tokens` (BOS first), and the
  new state. `copies` is the same number as at the start: the rows are `copies` hypotheses per
  sentence, consecutive, which the model is told rather than left to infer from shapes.
- `reorder_state(state, rows)`: the state of the hypotheses `rows` (int `(rows,)`, each
  taken from a row of the same sentence), after a beam search step picks its survivors.
- `select_sentences(state, sentences, copies)`: the state of the sentences `sentences` only
  (int `(kept,)`), when the searches drop the sentences that are done.

The state is data: a nested structure (tuples, named tuples, lists) of tensors that the
searches carry through `keras.ops.while_loop` and never look into. It may change its batch
size between `select_sentences` calls and its positions between steps (a growing cache), on
backends that allow it (TensorFlow, PyTorch); under JAX its shapes must stay the same.
"""

from typing import Protocol, runtime_checkable


@runtime_checkable
class DecodingModel(Protocol):
    """A model that `greedy_search` and `beam_search` can decode with (see the module).

    `keras_attention.models.Transformer` implements it. `isinstance(model, DecodingModel)`
    checks that the four methods are there.

    Example:

    >>> from keras_attention import Transformer
    >>> isinstance(Transformer.from_preset("tiny", vocabulary_size=100), DecodingModel)
    True
    """

    def start_decoding(self, source_ids, copies: int = 1, max_length=None, use_cache=True):
        """The first state, for `copies` hypotheses of each of `source_ids`' sentences."""

    def decode_step(self, state, tokens, index, copies: int = 1) -> tuple:
        """`(log_probs, state)`: the next token's log-probabilities after `tokens[:, index]`."""

    def reorder_state(self, state, rows):
        """The state of the hypotheses `rows`, each a row of the same sentence."""

    def select_sentences(self, state, sentences, copies: int = 1):
        """The state of the sentences `sentences` only."""
