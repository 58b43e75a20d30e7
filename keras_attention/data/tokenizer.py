"""A joint SentencePiece subword model: learned with `sentencepiece`, run with tensorflow-text;
optionally lowercasing its input and putting the capitals back into its output (`Recaser`)."""

import hashlib
import io
import itertools
import os
import threading
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import sentencepiece
import tensorflow as tf
import tensorflow_text
from tensorflow_text.python.ops import sentencepiece_tokenizer as tf_text_sentencepiece

from keras_attention.core.atomic_files import write_bytes_atomically
from keras_attention.core.file_checks import CorruptFileError
from keras_attention.core.special_tokens import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from keras_attention.data.recaser import Recaser

MODEL_TYPES = ("unigram", "bpe")
# `sentencepiece`'s random generator is global: seeding it and sampling are one step.
_SAMPLING_LOCK = threading.Lock()


class _SharedSentencepieceModel(tf.saved_model.experimental.TrackableResource):
    """The in-graph SentencePiece model, kept under a name derived from the model's bytes.

    tensorflow-text's own resource belongs to the op's kernel, and `tf.random.set_seed` (so
    `keras.utils.set_random_seed`) clears the eager kernel cache: every later call then fails
    with "Resource ... SentencepieceOp ... does not exist" (tensorflow/text#570). A resource
    with a `shared_name` lives in the resource manager instead, so it survives; models with
    the same bytes may share it safely. It is tracked, so SavedModels recreate it on load.
    """

    def __init__(self, model_proto: bytes):
        super().__init__()
        self._model_proto = model_proto
        self._shared_name = "subword_tokenizer_" + hashlib.sha256(model_proto).hexdigest()
        _ = self.resource_handle  # creates the resource now

    def _create_resource(self):
        return tf_text_sentencepiece.gen_sentencepiece_tokenizer.sentencepiece_op(
            model=self._model_proto, shared_name=self._shared_name
        )


class SubwordTokenizer(tf.Module):
    """A SentencePiece model shared by source and target, run inside the TensorFlow graph.

    `tokenize` and `detokenize` use `tensorflow_text.SentencepieceTokenizer`, so they work in
    `tf.data` pipelines and in exported SavedModels. Ids: 0 padding, 1 unknown, 2 BOS, 3 EOS.

    With a `recaser`, the tokenizer is a lowercasing one: `tokenize` lowercases sentences
    before splitting them, and `detokenize` gives its output capitals back with the recaser
    (for a model trained on lowercased text: `train(..., recase_texts=targets)`).

    Args:
        model_proto: the serialized SentencePiece model (bytes).
        recaser: a `Recaser`, for a lowercasing tokenizer; `None` keeps the case.

    Raises:
        ValueError: if `model_proto` is not a SentencePiece model, or uses other special ids.

    Example:

    >>> from keras_attention.data.generated_corpus import generate_pairs
    >>> texts = [text for pair in generate_pairs(200, seed=0) for text in pair]
    >>> tokenizer = SubwordTokenizer.train(texts, vocabulary_size=200)
    >>> ids = tokenizer.tokenize(["A man rides a bike."])  # tf.RaggedTensor, no BOS / EOS
    >>> ids.dtype, ids.shape[0]
    (tf.int32, 1)
    >>> tokenizer.detokenize(ids).numpy()
    array([b'A man rides a bike.'], dtype=object)
    """

    def __init__(self, model_proto: bytes, recaser: Recaser | None = None):
        super().__init__(name="subword_tokenizer")
        if not isinstance(model_proto, bytes) or not model_proto:
            raise ValueError("model_proto must be the non-empty bytes of a SentencePiece model")
        self.model_proto = model_proto
        try:
            processor = sentencepiece.SentencePieceProcessor(model_proto=model_proto)
        except RuntimeError as error:
            raise ValueError(f"model_proto is not a SentencePiece model: {error}") from error
        ids = (processor.pad_id(), processor.unk_id(), processor.bos_id(), processor.eos_id())
        if ids != (PAD_ID, UNK_ID, BOS_ID, EOS_ID):
            raise ValueError(
                "the SentencePiece model must use pad=0, unk=1, bos=2, eos=3 (train it with "
                f"SubwordTokenizer.train); got pad, unk, bos, eos = {ids}"
            )
        self.vocabulary_size = processor.get_piece_size()
        self._tokenizer = tensorflow_text.SentencepieceTokenizer(
            model=model_proto, out_type=tf.int32
        )
        # Replaces tensorflow-text's kernel-owned resource (see `_SharedSentencepieceModel`).
        self._tokenizer._model_resource = _SharedSentencepieceModel(model_proto)
        self.recaser = recaser

    @property
    def lowercase(self) -> bool:
        """Whether `tokenize` lowercases (and `detokenize` recases): a recaser is set."""
        return self.recaser is not None

    @classmethod
    def train(
        cls,
        texts: Iterable[str],
        vocabulary_size: int,
        model_type: str = "unigram",
        character_coverage: float = 1.0,
        num_threads: int = 2,
        recase_texts: Iterable[str] | None = None,
    ) -> "SubwordTokenizer":
        """Learns a SentencePiece model from `texts` (source and target sentences together).

        Args:
            texts: the training sentences, one string each.
            vocabulary_size: number of pieces, special tokens included.
            model_type: `"unigram"` or `"bpe"`.
            character_coverage: fraction of characters covered (1.0 keeps every character).
            num_threads: trainer threads.
            recase_texts: cased sentences of the target language: the tokenizer then
                lowercases, learning its subwords from lowercased `texts` and a `Recaser`
                from these.

        Raises:
            ValueError: for an unknown model type, no text, or a vocabulary too large for
                the text.
        """
        if model_type not in MODEL_TYPES:
            raise ValueError(f"model_type must be one of {MODEL_TYPES}; got {model_type!r}")
        texts = [text for text in texts if text.strip()]
        if not texts:
            raise ValueError("texts holds no non-empty sentence to learn a subword model from")
        recaser = None
        if recase_texts is not None:
            recaser = Recaser.train(recase_texts)
            texts = _lower_texts(texts)
        if vocabulary_size <= 4:
            raise ValueError(f"vocabulary_size must be > 4; got vocabulary_size={vocabulary_size}")
        model = io.BytesIO()
        try:
            sentencepiece.SentencePieceTrainer.train(
                sentence_iterator=iter(texts),
                model_writer=model,
                vocab_size=vocabulary_size,
                model_type=model_type,
                character_coverage=character_coverage,
                pad_id=PAD_ID,
                unk_id=UNK_ID,
                bos_id=BOS_ID,
                eos_id=EOS_ID,
                num_threads=num_threads,
                minloglevel=2,
            )
        except RuntimeError as error:
            raise ValueError(
                f"could not learn a SentencePiece model with vocabulary_size={vocabulary_size} "
                f"and model_type={model_type!r} from {len(texts)} sentences: {error}"
            ) from error
        return cls(model.getvalue(), recaser)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "SubwordTokenizer":
        """Reads a tokenizer saved with `save` (a SentencePiece `.model` file, and the
        recaser file beside it, `recaser_path(path)`, if there is one).

        Raises:
            FileNotFoundError: naming `path` if it is missing.
            CorruptFileError: naming `path`, or the recaser file, if it is corrupt.
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no SentencePiece model file at {path}")
        recaser_file = recaser_path(path)
        recaser = Recaser.load(recaser_file) if recaser_file.is_file() else None
        try:
            return cls(path.read_bytes(), recaser)
        except ValueError as error:
            raise CorruptFileError(
                f"{path} is corrupt or not a SentencePiece model of this library: {error}"
            ) from error

    def save(self, path: str | os.PathLike) -> Path:
        """Writes the SentencePiece model to `path` atomically, after the recaser beside it
        (`recaser_path(path)`; a recaser file there is removed for a tokenizer without one);
        returns the path."""
        recaser_file = recaser_path(path)
        if self.recaser is not None:
            self.recaser.save(recaser_file)
        else:
            recaser_file.unlink(missing_ok=True)
        return write_bytes_atomically(path, self.model_proto)

    def tokenize(self, sentences):
        """`(batch,)` strings -> `tf.RaggedTensor` `(batch, None)` of int32 ids (no BOS/EOS)."""
        if self.lowercase:
            sentences = _lower(sentences)
        return self._tokenizer.tokenize(sentences)

    def sample(self, sentences: list[str], alpha: float, seed: int) -> tf.RaggedTensor:
        """Like `tokenize`, but each sentence's segmentation is sampled rather than the best
        one: subword regularization (Kudo, 2018) with a unigram model, BPE-dropout with a
        BPE one. The same `seed` gives the same segmentations.

        Args:
            sentences: the sentences (Python strings).
            alpha: for a unigram model, the exponent that smooths the segmentations'
                probabilities before sampling (1 samples from the model itself; smaller
                values flatten it and split words into more pieces); for a BPE model, the
                probability of dropping a merge. Must be in (0, 1].
            seed: seed of the sampling.

        Returns:
            A `tf.RaggedTensor` `(batch, None)` of int32 ids (no BOS/EOS).

        Raises:
            ValueError: for an `alpha` outside (0, 1].
        """
        if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha <= 1:
            raise ValueError(f"alpha must be a number in (0, 1]; got alpha={alpha!r}")
        if self.lowercase:
            sentences = _lower_texts(sentences)
        processor = sentencepiece.SentencePieceProcessor(model_proto=self.model_proto)
        with _SAMPLING_LOCK:
            sentencepiece.set_random_generator_seed(seed)
            ids = processor.encode(
                list(sentences), enable_sampling=True, alpha=alpha, nbest_size=-1, num_threads=1
            )
        flat = np.fromiter(itertools.chain.from_iterable(ids), np.int32)
        return tf.RaggedTensor.from_row_lengths(
            flat, np.fromiter(map(len, ids), np.int64, len(ids))
        )

    def detokenize(self, ids):
        """Ids -> strings. Everything from the first EOS on, padding and BOS are dropped.

        Args:
            ids: a dense `(batch, length)` tensor or a `tf.RaggedTensor` of integer ids (int32
                or int64, e.g. the output of `argmax`).
        """
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(tf.convert_to_tensor(ids))
        ids = tf.cast(ids, tf.int32)
        # Keep the ids before the first EOS, then drop padding and BOS.
        before_eos = tf.equal(tf.math.cumsum(tf.cast(tf.equal(ids, EOS_ID), tf.int32), axis=1), 0)
        keep = tf.logical_and(before_eos, tf.logical_and(ids != PAD_ID, ids != BOS_ID))
        text = self._tokenizer.detokenize(tf.ragged.boolean_mask(ids, keep))
        return text if self.recaser is None else self.recaser.recase(text)

    def id_to_piece(self, ids):
        """The subword strings of `ids` (for labelling plots)."""
        return self._tokenizer.id_to_string(ids)


def recaser_path(path: str | os.PathLike) -> Path:
    """Where a tokenizer saved at `path` keeps its recaser: `tokenizer.model` ->
    `tokenizer.recaser.tsv`."""
    return Path(path).with_suffix(".recaser.tsv")


def _lower(sentences):
    """Lowercased strings (Unicode: "Ä" -> "ä"; "ß" stays), as a `tf.string` tensor."""
    return tf.strings.lower(tf.convert_to_tensor(sentences, tf.string), encoding="utf-8")


def _lower_texts(texts: Iterable[str]) -> list[str]:
    """Python strings lowercased as `tokenize` lowercases them (`_lower`)."""
    texts = list(texts)
    return (
        [line.decode("utf-8") for line in _lower(tf.constant(texts, tf.string)).numpy()]
        if texts
        else []
    )
