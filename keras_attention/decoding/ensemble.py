"""An ensemble of models that share a vocabulary, decoded as one model.

`Ensemble([model_a, model_b, ...])` implements the decoding protocol
(`decoding.protocol`) over its members: every search decodes it unchanged. At each step
the members' log-probabilities are averaged (a log-linear combination, as Marian's
ensembles with equal weights) and normalised again, so the scores stay log-probabilities;
forced decoding (`sequence_log_probs`) averages the same way, and the alignments average the
members' cross-attention weights. An ensemble of a model with itself is that model.
"""

from collections.abc import Sequence

from keras import ops


class Ensemble:
    """Several models decoded as one (see the module).

    Args:
        models: two or more models of the decoding protocol with the same target
            vocabulary (`output_vocabulary_size`).
        weights: each member's weight in the average (default equal; normalised to sum 1).

    Raises:
        ValueError: for fewer than two models, vocabularies of different sizes, or weights
            that are not one positive number per model.

    Example:

    >>> from keras_attention import Transformer
    >>> from keras_attention.decoding import beam_search
    >>> model = Transformer.from_preset("tiny", vocabulary_size=100)
    >>> model.build()
    >>> source_ids = np.array([[17, 42, 9, 3]])
    >>> alone, _ = beam_search(model, source_ids, beam_size=2, max_length=5)
    >>> paired, _ = beam_search(Ensemble([model, model]), source_ids, beam_size=2, max_length=5)
    >>> bool(keras.ops.all(alone == paired))  # a model with itself is the model
    True
    """

    def __init__(self, models: Sequence, weights: Sequence[float] | None = None):
        models = list(models)
        if len(models) < 2:
            raise ValueError(f"an Ensemble needs two or more models; got {len(models)}")
        sizes = [getattr(model, "output_vocabulary_size", None) for model in models]
        if len(set(sizes)) != 1:
            raise ValueError(
                f"the models of an Ensemble must share their target vocabulary; sizes {sizes}"
            )
        if weights is None:
            weights = [1.0] * len(models)
        weights = [float(weight) for weight in weights]
        if len(weights) != len(models) or not all(weight > 0 for weight in weights):
            raise ValueError(
                f"weights must be one positive number per model ({len(models)}); got {weights}"
            )
        self.models = models
        self.weights = [weight / sum(weights) for weight in weights]
        self.output_vocabulary_size = sizes[0]
        self.built = all(getattr(model, "built", True) for model in models)

    def _average(self, log_probs: list):
        mixed = sum(weight * lp for weight, lp in zip(self.weights, log_probs, strict=True))
        return ops.log_softmax(mixed, axis=-1)

    def start_decoding(self, source_ids, copies: int = 1, max_length=None, use_cache=True):
        """Each member's first state, as a tuple."""
        return tuple(
            model.start_decoding(source_ids, copies, max_length, use_cache) for model in self.models
        )

    def decode_step(self, state, tokens, index, copies: int = 1) -> tuple:
        """The members' averaged log-probabilities and their new states."""
        steps = [
            model.decode_step(member, tokens, index, copies)
            for model, member in zip(self.models, state, strict=True)
        ]
        return self._average([log_probs for log_probs, _ in steps]), tuple(
            member for _, member in steps
        )

    def reorder_state(self, state, rows):
        return tuple(
            model.reorder_state(member, rows)
            for model, member in zip(self.models, state, strict=True)
        )

    def select_sentences(self, state, sentences, copies: int = 1):
        return tuple(
            model.select_sentences(member, sentences, copies)
            for model, member in zip(self.models, state, strict=True)
        )

    def sequence_log_probs(self, source_ids, target_in_ids):
        """Forced decoding's log-probabilities, averaged as in `decode_step`."""
        return self._average(
            [model.sequence_log_probs(source_ids, target_in_ids) for model in self.models]
        )

    def cross_attention_weights(self, source_ids, target_in_ids, layer: int = -1):
        """The members' cross-attention weights, averaged with their weights."""
        return sum(
            weight * model.cross_attention_weights(source_ids, target_in_ids, layer)
            for weight, model in zip(self.weights, self.models, strict=True)
        )
