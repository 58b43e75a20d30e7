"""The translator as a SavedModel for TensorFlow Serving: strings in, strings out.

The `serving_default` signature takes `sentences` (a batch of `tf.string`) and returns
`translations` (`tf.string`) and `scores` (`float32`, the length-penalised beam score; the
sum of log-probabilities for greedy search, `beam_size=1`). The
subword tokenizer (tensorflow-text), beam search and detokenizer are all in the graph; only
TensorFlow and tensorflow-text ops are used, so TF Serving (which links both) runs it with
no Python.
"""

import numbers
import os
import re
import shutil
import tempfile
from pathlib import Path

import keras
import tensorflow as tf

from keras_attention.data.special_tokens import EOS_ID, PAD_ID
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.decoding import DEFAULT_EXTRA_LENGTH, beam_search, greedy_search

SIGNATURE_KEY = "serving_default"
SENTENCES_SPEC = tf.TensorSpec([None], tf.string, name="sentences")


def _check_int(name: str, value, minimum: int) -> None:
    """Raises `ValueError` naming `name` unless `value` is an integer (not a bool) >= `minimum`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {name}={value!r}")


class Translator(tf.Module):
    """A trained `Transformer` and its tokenizer: raw sentences in, translations out.

    Robust to any request: invalid UTF-8 is repaired (U+FFFD), surrounding whitespace is
    stripped, over-long inputs are cut to `max_source_length` tokens, an empty or blank
    sentence translates to `""`, and an empty batch gives an empty batch.

    Args:
        model: the trained `Transformer`.
        tokenizer: its `SubwordTokenizer`.
        beam_size: beam width; 1 means greedy search.
        alpha: length-penalty exponent.
        max_source_length: the longest source kept, in tokens (EOS included).
        extra_length: outputs may be `extra_length` tokens longer than their source.

    Raises:
        ValueError: naming the argument, if `beam_size` < 1, `max_source_length` < 2 or
            `extra_length` < 0, or one of them is not an integer.

    Example:

    >>> translator = Translator(model, tokenizer, beam_size=4)
    >>> translator.translate(tf.constant(["A man rides a bike."]))["translations"]
    """

    def __init__(
        self,
        model,
        tokenizer: SubwordTokenizer,
        beam_size: int = 4,
        alpha: float = 0.6,
        max_source_length: int = 128,
        extra_length: int = DEFAULT_EXTRA_LENGTH,
    ):
        super().__init__(name="translator")
        _check_int("beam_size", beam_size, 1)
        _check_int("max_source_length", max_source_length, 2)
        _check_int("extra_length", extra_length, 0)
        self.model = model
        self.tokenizer = tokenizer
        self.beam_size = beam_size
        self.alpha = alpha
        self.max_source_length = max_source_length
        self.extra_length = extra_length

    def encode(self, sentences):
        """Sentences -> `(batch, S)` int32 source ids ending with EOS, padded with 0."""
        sentences = tf.strings.unicode_transcode(
            sentences, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
        )
        pieces = self.tokenizer.tokenize(tf.strings.strip(sentences))
        pieces = pieces[:, : self.max_source_length - 1]
        eos = tf.fill([pieces.nrows(), 1], tf.constant(EOS_ID, tf.int32))
        ids = tf.concat([tf.cast(pieces, tf.int32), eos], axis=1)
        return ids.to_tensor(PAD_ID), pieces.row_lengths()

    def _search(self, source_ids):
        if self.beam_size == 1:
            return greedy_search(self.model, source_ids, extra_length=self.extra_length)
        return beam_search(
            self.model,
            source_ids,
            beam_size=self.beam_size,
            alpha=self.alpha,
            extra_length=self.extra_length,
        )

    @tf.function(input_signature=[SENTENCES_SPEC])
    def translate(self, sentences):
        """Translates a batch of sentences (one compiled graph); see the class docstring.

        Returns:
            `{"translations": tf.string (batch,), "scores": float32 (batch,)}`.
        """
        return self.translate_graph(sentences)

    def translate_graph(self, sentences):
        """The body of `translate`, to be traced by `tf.function` or `ExportArchive`."""
        source_ids, lengths = self.encode(sentences)

        def search():
            tokens, scores = self._search(source_ids)
            return self.tokenizer.detokenize(tokens), tf.cast(scores, tf.float32)

        def nothing():
            return tf.zeros([0], tf.string), tf.zeros([0], tf.float32)

        translations, scores = tf.cond(tf.size(lengths) > 0, search, nothing)
        blank = tf.equal(lengths, 0)
        translations = tf.where(blank, tf.constant(""), translations)
        scores = tf.where(blank, tf.zeros_like(scores), scores)
        return {"translations": translations, "scores": scores}


def _next_version(export_dir: Path) -> int:
    versions = [int(p.name) for p in export_dir.iterdir() if re.fullmatch(r"\d+", p.name)]
    return max(versions, default=0) + 1


def _move_into_place(staging: Path, target: Path, overwrite: bool) -> None:
    """Renames the complete `staging/model` to `target`.

    An old version being overwritten is first renamed into `staging` (deleted with it), so
    the version folder is missing only between two renames, and is never half-written. A
    version folder that appeared meanwhile (another export) raises `FileExistsError`.
    """
    if overwrite and target.exists():
        os.replace(target, staging / "old")
    try:
        os.rename(staging / "model", target)
    except OSError as error:
        if (staging / "old").exists():
            os.replace(staging / "old", target)  # puts the old version back
            raise
        if target.exists():
            raise FileExistsError(f"{target} was created by another export") from error
        raise


def export_translator(
    translator: Translator,
    export_dir: str | os.PathLike,
    version: int | None = None,
    overwrite: bool = False,
) -> Path:
    """Writes the translator as a SavedModel in `export_dir/<version>/`, atomically.

    Written with `keras.export.ExportArchive`, which tracks the model's variables so that
    loaders restoring them by name (TF Serving, `saved_model_cli run`) find every one (a plain
    `tf.saved_model.save` of the model does not). The SavedModel goes to a temporary folder
    beside the target and is renamed into place only when complete, so a failed export
    leaves no half-written version folder.

    Args:
        translator: the `Translator`.
        export_dir: the model's folder, as TF Serving's `--model_base_path`.
        version: the version number; default one more than the highest present (or 1).
        overwrite: replace an existing version (otherwise `FileExistsError`).

    Raises:
        ValueError: if `version` is not a non-negative integer (nothing is written).
        FileExistsError: if the version exists and `overwrite` is false.

    Returns:
        The path of the version folder.
    """
    if version is not None:
        _check_int("version", version, 0)
    export_dir = Path(export_dir)
    export_dir.mkdir(parents=True, exist_ok=True)
    version = _next_version(export_dir) if version is None else version
    target = export_dir / str(version)
    if target.exists() and not overwrite:
        raise FileExistsError(f"{target} exists; pass overwrite=True or another version")
    staging = Path(tempfile.mkdtemp(dir=export_dir, prefix=f".{version}-"))
    try:
        archive = keras.export.ExportArchive()
        archive.track(translator.model)
        archive.track(translator.tokenizer)
        archive.add_endpoint(
            SIGNATURE_KEY, translator.translate_graph, input_signature=[SENTENCES_SPEC]
        )
        archive.write_out(str(staging / "model"), verbose=False)
        _move_into_place(staging, target, overwrite)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def load_exported(path: str | os.PathLike):
    """The `serving_default` signature of an exported translator, loaded as TF Serving would.

    Only TensorFlow and tensorflow-text are needed (importing tensorflow-text registers its
    ops); call the result with `sentences=tf.constant([...])`.
    """
    import tensorflow_text  # noqa: F401 (registers the SentencePiece ops)

    return tf.saved_model.load(str(path)).signatures[SIGNATURE_KEY]
