"""The `Translator`: a trained model and its tokenizer, raw sentences in, translations out.

Tokenizer (tensorflow-text), search and detokenizer run in one TensorFlow graph, so the same
`Translator` is called in Python and written as a SavedModel (`keras_attention.serving.export`).
A request of any size is decoded `chunk_size` length-sorted sentences at a time
(`keras_attention.serving.chunks`), so memory depends on the chunk, not the request.
"""

import os
from collections.abc import Sequence
from pathlib import Path

import keras
import tensorflow as tf

from keras_attention.core.checks import check_int_at_least
from keras_attention.core.special_tokens import EOS_ID, PAD_ID
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.decoding import (
    DEFAULT_EXTRA_LENGTH,
    beam_search,
    forced_scores,
    greedy_search,
    sample_search,
)
from keras_attention.decoding.sampling import check_sampling
from keras_attention.models import preset_sources
from keras_attention.models.preset_folder import save_to_preset
from keras_attention.models.transformer import Transformer
from keras_attention.serving.alignment import align_words
from keras_attention.serving.chunks import map_length_sorted_chunks

# Sentences decoded at once by default: requests of 64 were about twice as fast per sentence
# as one request of 2,000, whose memory grew by 5-9 GB (issue 13).
DEFAULT_CHUNK_SIZE = 64
SENTENCES_SPEC = tf.TensorSpec([None], tf.string, name="sentences")
TARGETS_SPEC = tf.TensorSpec([None], tf.string, name="targets")
# The `sample` signature's inputs: the sentences, then the random stream and its cuts.
SAMPLE_SPECS = [
    SENTENCES_SPEC,
    tf.TensorSpec([], tf.int64, name="seed"),
    tf.TensorSpec([], tf.float32, name="temperature"),
    tf.TensorSpec([], tf.int32, name="top_k"),
    tf.TensorSpec([], tf.float32, name="top_p"),
]
SENTENCES_RANK_ERROR = "sentences must be a vector (rank 1) of strings; got rank"
# Strings in and out need the tokenizer (tensorflow-text) and the search in one TF graph.
BACKEND_ERROR = (
    "Translator needs the TensorFlow backend: its tokenizer and search run in a TensorFlow "
    "graph (strings in, strings out), and this process runs Keras on {backend!r}. Set "
    "KERAS_BACKEND=tensorflow before Keras is imported, or decode token ids on any backend "
    "with keras_attention.decoding.beam_search(model, source_ids, beam_size=..., alpha=...) "
    "(model = Transformer.from_preset(path); its source_ids end with EOS, padded with 0)."
)


# The graph-building methods are left out of AutoGraph's conversion when a caller's
# `tf.function` converts its code (`do_not_convert`): the searches are explicit loops, with no
# Python control flow on tensors to convert, and converting them only costs tracing time.
_not_converted = tf.autograph.experimental.do_not_convert


def check_tensorflow_backend() -> None:
    """Raises unless Keras runs on TensorFlow, which `Translator` needs (`BACKEND_ERROR`).

    Raises:
        RuntimeError: under `KERAS_BACKEND=jax` or `torch`, naming the TensorFlow backend and
            `keras_attention.decoding.beam_search`, which decodes ids on every backend.
    """
    backend = keras.backend.backend()
    if backend != "tensorflow":
        raise RuntimeError(BACKEND_ERROR.format(backend=backend))


def check_sentences(sentences):
    """`sentences` as a `tf.string` vector (static shape `[None]`), once it is known to be one.

    A rank known now (eager tensors, or a graph traced with a known rank) is checked now; in a
    graph the rank is also checked when the graph runs. That second check matters for the
    exported signature: it declares the shape `[None]`, but neither a signature loaded with
    `tf.saved_model.load` nor a `Session` fed as TF Serving feeds it checks a declared shape,
    and TensorFlow's graph optimiser takes the declaration at its word (it folds `tf.rank` of
    such an input to 1, and a matrix would then silently give one translation per element).
    The rank is therefore read from a copy of the input's shape that TensorFlow cannot see
    through (serialized and parsed back, a few bytes).

    Args:
        sentences: a `tf.string` tensor, or anything `tf.convert_to_tensor` makes one of.

    Raises:
        ValueError: if the rank is known now and is not 1: "sentences must be a vector (rank 1)
            of strings; got rank R (shape S)".
        tf.errors.InvalidArgumentError: the same message, when a graph runs on such an input.
    """
    sentences = tf.convert_to_tensor(sentences, tf.string)
    rank = sentences.shape.rank
    if rank is not None and rank != 1:
        raise ValueError(f"{SENTENCES_RANK_ERROR} {rank} (shape {sentences.shape.as_list()})")
    if tf.executing_eagerly():
        return sentences
    shape = tf.io.parse_tensor(tf.io.serialize_tensor(tf.shape(sentences)), tf.int32)
    runtime_rank = tf.size(shape)
    message = tf.strings.format(f"{SENTENCES_RANK_ERROR} {{}} (shape {{}})", (runtime_rank, shape))
    with tf.control_dependencies([tf.debugging.Assert(tf.equal(runtime_rank, 1), [message])]):
        checked = tf.identity(sentences)
    checked.set_shape([None])  # known from here on, also where it was not (the tokenizer needs it)
    return checked


class Translator(tf.Module):
    """A trained `Transformer` and its tokenizer: raw sentences in, translations out.

    Robust to any request: invalid UTF-8 is repaired (U+FFFD), surrounding whitespace is
    stripped, over-long inputs are cut to `max_source_length` tokens, an empty or blank
    sentence translates to `""`, and an empty batch gives an empty batch. A batch must be a
    vector (rank 1) of strings: a scalar or a matrix is refused with an error giving its rank
    (see `check_sentences`), never translated element by element.

    Args:
        model: the trained `Transformer`.
        tokenizer: its `SubwordTokenizer`.
        beam_size: beam width; 1 means greedy search.
        alpha: length-penalty exponent.
        max_source_length: the longest source kept, in tokens (EOS included).
        extra_length: outputs may be `extra_length` tokens longer than their source.
        chunk_size: the most sentences decoded at once: a batch is sorted by length and
            decoded in chunks of this many (results in the batch's order, the same as
            unchunked); `None` decodes a batch at once.

    Raises:
        RuntimeError: unless Keras runs on TensorFlow (`check_tensorflow_backend`): on JAX or
            PyTorch, decode ids with `keras_attention.decoding.beam_search` instead.
        ValueError: naming the argument, if `beam_size` < 1, `max_source_length` < 2,
            `extra_length` < 0 or `chunk_size` < 1, or one of them is not an integer.

    Example:

    >>> translator = Translator.from_preset("runs/translator")  # a run of tools/train.py
    >>> result = translator.translate(["A man rides a bike.", "  "])
    >>> sorted(result)
    ['scores', 'translations']
    >>> result["translations"].numpy()  # a blank sentence translates to ""
    array([b'...', b''], dtype=object)
    >>> from keras_attention.runs.train import load_run
    >>> model, tokenizer = load_run("runs/translator")
    >>> translator = Translator(model, tokenizer, beam_size=4)
    >>> translator.translate(tf.constant(["A man rides a bike."]))["scores"].dtype
    tf.float32
    """

    def __init__(
        self,
        model,
        tokenizer: SubwordTokenizer,
        beam_size: int = 4,
        alpha: float = 0.6,
        max_source_length: int = 128,
        extra_length: int = DEFAULT_EXTRA_LENGTH,
        chunk_size: int | None = DEFAULT_CHUNK_SIZE,
    ):
        check_tensorflow_backend()
        super().__init__(name="translator")
        check_int_at_least("beam_size", beam_size, 1)
        check_int_at_least("max_source_length", max_source_length, 2)
        check_int_at_least("extra_length", extra_length, 0)
        if chunk_size is not None:
            check_int_at_least("chunk_size", chunk_size, 1)
        self.model = model
        self.tokenizer = tokenizer
        self.beam_size = beam_size
        self.alpha = alpha
        self.max_source_length = max_source_length
        self.extra_length = extra_length
        self.chunk_size = chunk_size
        self._samplers = {}  # a traced `sample` per number of samples

    @classmethod
    def from_preset(
        cls,
        preset: str | os.PathLike,
        beam_size: int | None = None,
        alpha: float | None = None,
        **kwargs,
    ) -> "Translator":
        """The translator of a run folder or a preset folder: its model and tokenizer.

        Args:
            preset: a run folder written by `tools/train.py` (its `model.keras`, else its
                last epoch checkpoint) or a preset folder written by `save_to_preset`.
            beam_size: beam width; default: the run's (`config.json`) or the preset's
                (`metadata.json`), else 4.
            alpha: length-penalty exponent; default: the run's or the preset's, else 0.6.
            **kwargs: the other arguments of `Translator` (`max_source_length`,
                `extra_length`, `chunk_size`).

        Returns:
            The `Translator`.

        Raises:
            RuntimeError: unless Keras runs on TensorFlow (checked before anything loads).
            ValueError: for a size name (an untrained model has no tokenizer), naming
                `preset` if it is no existing path or a folder that is neither a run's nor a
                preset's, or naming a corrupt file (a tokenizer that does not fit the model,
                too).
            FileNotFoundError: naming the file the folder lacks.

        Example:

        >>> translator = Translator.from_preset("runs/translator")  # the run's beam search
        >>> translator.beam_size
        2
        >>> translator.translate_texts(["A man rides a bike."])
        ['...']
        """
        check_tensorflow_backend()
        preset_beam_size, preset_alpha = preset_sources.beam_search_settings(preset)
        model = Transformer.from_preset(preset)
        tokenizer = preset_sources.load_tokenizer(preset, model)  # one that fits the model
        return cls(
            model,
            tokenizer,
            preset_beam_size if beam_size is None else beam_size,
            preset_alpha if alpha is None else alpha,
            **kwargs,
        )

    def save_to_preset(
        self,
        preset_dir: str | os.PathLike,
        source_language: str | None = None,
        target_language: str | None = None,
    ) -> Path:
        """Writes the model, the tokenizer and the search settings as a preset folder in
        keras-hub's layout, which `Translator.from_preset` and `Transformer.from_preset`
        load (see `keras_attention.models.preset_folder.save_to_preset`).

        Args:
            preset_dir: the folder to create (it must not exist, or be empty).
            source_language: the source language code, if known, for `metadata.json`.
            target_language: the target language code, if known.

        Returns:
            The path of the preset folder.

        Raises:
            FileExistsError: if `preset_dir` exists and is not an empty folder.
        """
        return save_to_preset(
            self.model,
            preset_dir,
            self.tokenizer,
            beam_size=self.beam_size,
            alpha=self.alpha,
            source_language=source_language,
            target_language=target_language,
        )

    def with_model(self, model) -> "Translator":
        """The same translator (search, lengths, chunks) over another model."""
        return Translator(
            model,
            self.tokenizer,
            self.beam_size,
            self.alpha,
            self.max_source_length,
            self.extra_length,
            self.chunk_size,
        )

    def encode(self, sentences, cut: bool = True):
        """Sentences -> `(batch, S)` int32 ids ending with EOS, padded with 0, at most
        `max_source_length` with EOS (unless not `cut`); and the tokens before EOS."""
        sentences = tf.strings.unicode_transcode(
            sentences, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
        )
        pieces = self.tokenizer.tokenize(tf.strings.strip(sentences))
        if cut:
            pieces = pieces[:, : self.max_source_length - 1]
        eos = tf.fill([pieces.nrows(), 1], tf.constant(EOS_ID, tf.int32))
        ids = tf.concat([tf.cast(pieces, tf.int32), eos], axis=1)
        return ids.to_tensor(PAD_ID), pieces.row_lengths()

    def _search(self, source_ids, beam_size: int, num_hypotheses: int | None = None):
        if beam_size == 1 and num_hypotheses is None:
            return greedy_search(self.model, source_ids, extra_length=self.extra_length)
        return beam_search(
            self.model,
            source_ids,
            beam_size=beam_size,
            alpha=self.alpha,
            extra_length=self.extra_length,
            num_hypotheses=num_hypotheses,
        )

    def translate(self, sentences):
        """Translates a batch of sentences (one compiled graph); see the class docstring.

        Args:
            sentences: a vector (rank 1) of strings: a `tf.string` tensor, or a list of `str`
                or `bytes`.

        Returns:
            `{"translations": tf.string (batch,), "scores": float32 (batch,)}`.

        Raises:
            ValueError: if `sentences` is not a vector, giving its rank.
        """
        return self._translate(check_sentences(sentences))

    def translate_texts(self, sentences: Sequence[str]) -> list[str]:
        """Translates a list of sentences: `translate`, as Python strings.

        Args:
            sentences: the sentences (`str`).

        Returns:
            One translation (`str`) per sentence, in order.

        Example:

        >>> translator = Translator.from_preset("runs/translator")
        >>> translator.translate_texts(["A man rides a bike.", ""])
        ['...', '']
        """
        translations = self.translate(list(sentences))["translations"].numpy()
        return [text.decode("utf-8") for text in translations]

    def n_best(self, sentences, num_hypotheses: int | None = None):
        """The n-best list of each sentence: its beam search's `num_hypotheses` best
        hypotheses (default: all `beam_size`), best first, with their scores (the
        length-penalised log-probabilities that `translate` reports for the first).

        Args:
            sentences: a vector (rank 1) of strings.
            num_hypotheses: how many, at most `beam_size`.

        Returns:
            `{"translations": tf.string (batch, N), "scores": float32 (batch, N)}`.

        Raises:
            ValueError: if `num_hypotheses` is not in `[1, beam_size]`, or `sentences` is not
                a vector.

        Example:

        >>> translator = Translator.from_preset("runs/translator")  # beam 2
        >>> result = translator.n_best(["A man rides a bike."])
        >>> result["translations"].shape, bool(result["scores"][0, 0] >= result["scores"][0, 1])
        (TensorShape([1, 2]), True)
        """
        count = self.beam_size if num_hypotheses is None else num_hypotheses
        check_int_at_least("num_hypotheses", count, 1)
        if count > self.beam_size:
            raise ValueError(
                f"num_hypotheses must be at most the beam size {self.beam_size}; got "
                f"num_hypotheses={count}"
            )
        result = self._n_best(check_sentences(sentences))
        return {name: value[:, :count] for name, value in result.items()}

    def sample(
        self,
        sentences,
        num_samples: int | None = None,
        seed: int = 0,
        temperature: float = 1.0,
        top_k: int = 0,
        top_p: float = 1.0,
        first_index: int = 0,
    ):
        """Sampled translations (`keras_attention.decoding.sample_search`): each token drawn
        from the model's distribution, after `temperature`, cut to `top_k` tokens and to the
        nucleus `top_p` (0 and 1.0: no cut). The same seed gives the same samples, whatever
        the batch or its chunks (a sentence's stream is keyed by its place in `sentences`).

        Args:
            sentences: a vector (rank 1) of strings.
            num_samples: samples per sentence; `None` for one, without the samples' axis.
            seed: the random stream's seed.
            temperature: the log-probabilities' divisor (> 0), as in `sample_search`.
            top_k: draw among the `top_k` most likely tokens; 0 for all.
            top_p: draw within the nucleus of this probability; 1.0 for all.
            first_index: the place of `sentences[0]` in a longer input that is sampled a
                batch at a time (the sentences' keys start there), so that every batch of
                a file gets its own random streams.

        Returns:
            `{"translations": tf.string (batch,) or (batch, num_samples), "scores": float32}`,
            the scores being each sample's log-probability under the model.

        Raises:
            ValueError: for a setting out of range, naming it.

        Example:

        >>> translator = Translator.from_preset("runs/translator")
        >>> first = translator.sample(["A man rides a bike."], num_samples=3, seed=7)
        >>> again = translator.sample(["A man rides a bike."], num_samples=3, seed=7)
        >>> same = tf.reduce_all(first["translations"] == again["translations"])
        >>> first["translations"].shape, bool(same)
        (TensorShape([1, 3]), True)
        """
        copies = 1 if num_samples is None else num_samples
        check_int_at_least("num_samples", copies, 1)
        check_sampling(temperature, top_k, top_p)
        if copies not in self._samplers:
            self._samplers[copies] = tf.function(
                lambda *args: self._sample_graph(*args, num_samples=copies),
                input_signature=[*SAMPLE_SPECS, tf.TensorSpec([], tf.int32)],
                autograph=False,
            )
        result = self._samplers[copies](
            check_sentences(sentences),
            tf.constant(seed, tf.int64),
            tf.constant(temperature, tf.float32),
            tf.constant(top_k, tf.int32),
            tf.constant(top_p, tf.float32),
            tf.constant(first_index, tf.int32),
        )
        if num_samples is None:
            return {name: value[:, 0] for name, value in result.items()}
        return result

    def score(self, sentences, targets):
        """The model's score of given translations, by forced decoding (one forward pass):
        `keras_attention.decoding.forced_scores` on the tokenized pairs.

        Args:
            sentences: a vector (rank 1) of source strings.
            targets: a vector of their translations, as many.

        The sources are cut to `max_source_length` tokens as for translating; the targets
        are scored whole.

        Returns:
            `{"scores": float32 (batch,)`, the log-probability divided by the length penalty
            with this translator's `alpha` (what `translate` reports for its own output),
            `"log_probs"`: the raw log-probability, `"per_token"`: divided by the tokens
            (EOS included), `"lengths"`: int32 tokens}`.

        Raises:
            ValueError: if the two are not vectors of the same length.

        Example:

        >>> translator = Translator.from_preset("runs/translator")
        >>> scored = translator.score(["A man rides a bike."], ["Ein Mann fährt Fahrrad."])
        >>> sorted(scored), bool(scored["log_probs"][0] < 0)
        (['lengths', 'log_probs', 'per_token', 'scores'], True)

        A translation the search made, scored from its text, gets the search's own score
        when its text tokenizes into the search's tokens (which a trained model's usually
        does; `keras_attention.decoding.forced_scores` on the search's token ids always
        does).
        """
        sentences, targets = check_sentences(sentences), check_sentences(targets)
        if sentences.shape[0] != targets.shape[0]:
            raise ValueError(
                f"score needs one target per sentence; got {sentences.shape[0]} sentences "
                f"and {targets.shape[0]} targets"
            )
        return self._score(sentences, targets)

    def align(self, sentences: Sequence[str], translations: Sequence[str]) -> list[str]:
        """Word alignments of each sentence and its translation, from the last decoder
        block's cross-attention (averaged over heads; see `keras_attention.serving.alignment`
        for the rule and its known weakness), in Pharaoh format: `"i-j"` pairs, `i` a source
        word and `j` a target word, words being whitespace-separated tokens, counted from 0.

        Example:

        >>> translator = Translator.from_preset("runs/translator")
        >>> translator.align(["a man"], ["ein Mann"])[0].count("-") >= 2
        True
        """
        return align_words(self, list(sentences), list(translations))

    # Without AutoGraph, as `ExportArchive` traces its endpoints: the searches are built from
    # explicit loops (`keras.ops.while_loop`), so converting their Python source only costs
    # time (a beam search's first trace took 10.3 s with AutoGraph, 5.4 s without, the
    # same graph).
    @tf.function(input_signature=[SENTENCES_SPEC], autograph=False)
    def _translate(self, sentences):
        return self.translate_graph(sentences)

    @tf.function(input_signature=[SENTENCES_SPEC], autograph=False)
    def _n_best(self, sentences):
        return self.n_best_graph(sentences)

    @tf.function(input_signature=[SENTENCES_SPEC, TARGETS_SPEC], autograph=False)
    def _score(self, sentences, targets):
        return self.score_graph(sentences, targets)

    @_not_converted
    def translate_graph(self, sentences):
        """The body of `translate`, to be traced by `tf.function` or `ExportArchive`."""
        return self._translate_graph(sentences, self.beam_size)

    @_not_converted
    def greedy_graph(self, sentences):
        """`translate_graph` with greedy search: the export's `greedy` signature."""
        return self._translate_graph(sentences, 1)

    @_not_converted
    def n_best_graph(self, sentences):
        """The body of `n_best` (all `beam_size` hypotheses): the export's `n_best`
        signature, `translations` and `scores` `(batch, beam_size)`."""
        beams = self.beam_size

        def decode(chunk_ids):
            tokens, scores = self._search(chunk_ids, beams, num_hypotheses=beams)
            width = tf.shape(tokens)[-1]
            texts = self.tokenizer.detokenize(tf.reshape(tokens, [-1, width]))
            return tf.reshape(texts, [-1, beams]), scores

        specs = ((tf.string, (beams,)), (tf.float32, (beams,)))
        translations, scores = self._decode_graph(sentences, decode, specs)
        return {"translations": translations, "scores": scores}

    @_not_converted
    def sample_graph(self, sentences, seed, temperature, top_k, top_p):
        """The body of `sample` with one sample a sentence: the export's `sample` signature
        (`sentences`, `seed` int64, `temperature` float32, `top_k` int32, `top_p` float32 ->
        `translations` and `scores` `(batch,)`)."""
        result = self._sample_graph(
            sentences, seed, temperature, top_k, top_p, tf.constant(0), num_samples=1
        )
        return {name: value[:, 0] for name, value in result.items()}

    def _sample_graph(
        self, sentences, seed, temperature, top_k, top_p, first_index, num_samples: int
    ):
        checks = [
            tf.debugging.assert_greater(temperature, 0.0, "temperature must be above 0"),
            tf.debugging.assert_non_negative(top_k, "top_k must be 0 (off) or positive"),
            tf.debugging.assert_greater(top_p, 0.0, "top_p must be in (0, 1]"),
            tf.debugging.assert_less_equal(top_p, 1.0, "top_p must be in (0, 1]"),
        ]
        with tf.control_dependencies(checks):
            seed = tf.cast(tf.math.floormod(seed, 2**31), tf.int32)

        def decode(chunk_ids, positions):
            tokens, scores = sample_search(
                self.model,
                chunk_ids,
                num_samples=num_samples,
                temperature=temperature,
                top_k=top_k,
                top_p=top_p,
                seed=seed,
                sentence_keys=positions + first_index,
                extra_length=self.extra_length,
            )
            width = tf.shape(tokens)[-1]
            texts = self.tokenizer.detokenize(tf.reshape(tokens, [-1, width]))
            return tf.reshape(texts, [-1, num_samples]), scores

        specs = ((tf.string, (num_samples,)), (tf.float32, (num_samples,)))
        translations, scores = self._decode_graph(sentences, decode, specs, with_positions=True)
        return {"translations": translations, "scores": scores}

    @_not_converted
    def score_graph(self, sentences, targets):
        """The body of `score`: the export's `score` signature."""
        # The targets whole: a score of a cut translation would be another translation's.
        target_ids = self.encode(check_sentences(targets), cut=False)[0]

        def decode(chunk_ids, chunk_targets):
            width = tf.reduce_max(tf.reduce_sum(tf.cast(chunk_targets != PAD_ID, tf.int32), 1))
            result = forced_scores(
                self.model, chunk_ids, chunk_targets[:, : tf.maximum(width, 1)], self.alpha
            )
            return (result["score"], result["log_prob"], result["per_token"], result["length"])

        specs = ((tf.float32, ()), (tf.float32, ()), (tf.float32, ()), (tf.int32, ()))
        outputs = self._decode_graph(
            sentences, decode, specs, extra_inputs=(target_ids,), blank_rows=False
        )
        return dict(zip(("scores", "log_probs", "per_token", "lengths"), outputs, strict=True))

    def _translate_graph(self, sentences, beam_size: int):
        def decode(chunk_ids):
            tokens, scores = self._search(chunk_ids, beam_size)
            return self.tokenizer.detokenize(tokens), scores

        translations, scores = self._decode_graph(
            sentences, decode, ((tf.string, ()), (tf.float32, ()))
        )
        return {"translations": translations, "scores": scores}

    def _decode_graph(
        self,
        sentences,
        decode,
        specs: tuple,
        extra_inputs: tuple = (),
        with_positions: bool = False,
        blank_rows: bool = True,
    ) -> tuple:
        """`decode` over the encoded `sentences`, in length-sorted chunks (or at once), in
        the request's order; an empty batch gives empty outputs of `specs`' shapes, and,
        with `blank_rows`, a blank sentence gets `""` and 0 in every output."""
        source_ids, lengths = self.encode(check_sentences(sentences))

        def search():
            if self.chunk_size is None:
                positions = [tf.range(tf.shape(source_ids)[0])] if with_positions else []
                outputs = decode(source_ids, *positions, *extra_inputs)
                return tuple(
                    tf.cast(output, dtype)
                    for output, (dtype, _) in zip(outputs, specs, strict=True)
                )
            return map_length_sorted_chunks(
                decode, source_ids, lengths, self.chunk_size, extra_inputs, specs, with_positions
            )

        def nothing():
            return tuple(tf.zeros([0, *shape], dtype) for dtype, shape in specs)

        outputs = tf.cond(tf.size(lengths) > 0, search, nothing)
        if not blank_rows:
            return outputs
        blank = tf.equal(lengths, 0)
        results = []
        for output, (dtype, shape) in zip(outputs, specs, strict=True):
            mask = tf.reshape(blank, [-1] + [1] * len(shape))
            empty = tf.constant("") if dtype == tf.string else tf.zeros([], dtype)
            results.append(tf.where(mask, empty, output))
        return tuple(results)
