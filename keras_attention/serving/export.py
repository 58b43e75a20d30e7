"""The translator as a SavedModel for TensorFlow Serving: strings in, strings out.

The `serving_default` signature takes `sentences` (a vector, rank 1, of `tf.string`; any other
rank is refused with an error giving it) and returns `translations` (`tf.string`, one per
sentence) and `scores` (`float32`, the length-penalised beam score; the sum of log-probabilities
for greedy search, `beam_size=1`). The `greedy` signature, beside it, takes and returns the
same with greedy search, for callers who want latency over quality. The subword tokenizer
(tensorflow-text), the search and the detokenizer are all in the graph; only TensorFlow and
tensorflow-text ops are used, so TF Serving (which links both) runs it with no Python. A
request of any size is decoded `chunk_size` length-sorted sentences at a time
(`keras_attention.serving.chunks`), so memory depends on the chunk, not the request. The export
carries TF Serving's warm-up requests (`assets.extra/tf_serving_warmup_requests`,
`keras_attention.serving.warmup_requests`).
"""

import contextlib
import fcntl
import os
import re
import shutil
import tempfile
import time
import typing
from collections.abc import Sequence
from pathlib import Path

import keras
import tensorflow as tf

from keras_attention.core.atomic_files import json_text, move_folder_into_place
from keras_attention.core.checks import check_int_at_least
from keras_attention.core.file_checks import CorruptFileError, read_json_record
from keras_attention.core.literal_paths import literal_path
from keras_attention.core.special_tokens import EOS_ID, PAD_ID
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.decoding import DEFAULT_EXTRA_LENGTH, beam_search, greedy_search
from keras_attention.models import preset_sources
from keras_attention.models.dtype_copy import copy_with_dtype
from keras_attention.models.preset_folder import save_to_preset
from keras_attention.models.transformer import Transformer
from keras_attention.serving.chunks import map_length_sorted_chunks
from keras_attention.serving.warmup_requests import (
    DEFAULT_WARMUP_SENTENCES,
    check_warmup_sentences,
    write_warmup_requests,
)

SIGNATURE_KEY = "serving_default"
# The export's description of itself (languages, search), beside TF Serving's warm-up file.
METADATA_FILE = "assets.extra/keras_attention.json"
GREEDY_SIGNATURE_KEY = "greedy"
# Sentences decoded at once by default: requests of 64 were about twice as fast per sentence
# as one request of 2,000, whose memory grew by 5-9 GB (issue 13).
DEFAULT_CHUNK_SIZE = 64
SENTENCES_SPEC = tf.TensorSpec([None], tf.string, name="sentences")
SENTENCES_RANK_ERROR = "sentences must be a vector (rank 1) of strings; got rank"
# Strings in and out need the tokenizer (tensorflow-text) and the search in one TF graph.
BACKEND_ERROR = (
    "Translator needs the TensorFlow backend: its tokenizer and search run in a TensorFlow "
    "graph (strings in, strings out), and this process runs Keras on {backend!r}. Set "
    "KERAS_BACKEND=tensorflow before Keras is imported, or decode token ids on any backend "
    "with keras_attention.decoding.beam_search(model, source_ids, beam_size=..., alpha=...) "
    "(model = Transformer.from_preset(path); its source_ids end with EOS, padded with 0)."
)
# A staging folder of `export_translator`: `tempfile.mkdtemp(prefix=f".{version}-")`, which
# adds 8 characters of `tempfile`'s alphabet; its lock file is held while the export runs.
STAGING_NAME = re.compile(r"\.(\d+)-[a-z0-9_]{8}")
STAGING_LOCK = "export.lock"
# A staging folder without its lock file is either being created (for microseconds) or was
# left by an export killed before locks existed; it is removed only once this old.
UNLOCKED_STAGING_MAX_AGE_S = 3600


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

    def _search(self, source_ids, beam_size: int):
        if beam_size == 1:
            return greedy_search(self.model, source_ids, extra_length=self.extra_length)
        return beam_search(
            self.model,
            source_ids,
            beam_size=beam_size,
            alpha=self.alpha,
            extra_length=self.extra_length,
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

    # Without AutoGraph, as `ExportArchive` traces its endpoints: the searches are built from
    # explicit loops (`keras.ops.while_loop`), so converting their Python source only costs
    # time (a beam search's first trace took 10.3 s with AutoGraph, 5.4 s without, the
    # same graph).
    @tf.function(input_signature=[SENTENCES_SPEC], autograph=False)
    def _translate(self, sentences):
        return self.translate_graph(sentences)

    def translate_graph(self, sentences):
        """The body of `translate`, to be traced by `tf.function` or `ExportArchive`."""
        return self._translate_graph(sentences, self.beam_size)

    def greedy_graph(self, sentences):
        """`translate_graph` with greedy search: the export's `greedy` signature."""
        return self._translate_graph(sentences, 1)

    def _translate_graph(self, sentences, beam_size: int):
        source_ids, lengths = self.encode(check_sentences(sentences))

        def translate_chunk(chunk_ids):
            tokens, scores = self._search(chunk_ids, beam_size)
            return self.tokenizer.detokenize(tokens), tf.cast(scores, tf.float32)

        def search():
            if self.chunk_size is None:
                return translate_chunk(source_ids)
            return map_length_sorted_chunks(translate_chunk, source_ids, lengths, self.chunk_size)

        def nothing():
            return tf.zeros([0], tf.string), tf.zeros([0], tf.float32)

        translations, scores = tf.cond(tf.size(lengths) > 0, search, nothing)
        blank = tf.equal(lengths, 0)
        translations = tf.where(blank, tf.constant(""), translations)
        scores = tf.where(blank, tf.zeros_like(scores), scores)
        return {"translations": translations, "scores": scores}


def _lock_staging(staging: Path):
    """Creates `staging/export.lock`, locked (`flock`) until the returned file is closed.

    The file is locked under another name and then renamed, so an `export.lock` that another
    export can see is always locked while this export runs.
    """
    pending = staging / f"{STAGING_LOCK}.new"
    lock = open(pending, "wb")  # noqa: SIM115 (held open for the whole export)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        os.rename(pending, staging / STAGING_LOCK)
    except BaseException:
        lock.close()
        raise
    return lock


@contextlib.contextmanager
def _claim_if_stale(staging: Path):
    """Yields whether `staging` was left by an export that no longer runs, holding its lock.

    Stale: its lock file is free (the system frees a process's locks when it ends, killed or
    not) or, lacking a lock file, the folder is older than `UNLOCKED_STAGING_MAX_AGE_S`.
    """
    try:
        # Writable: `flock` over NFS is emulated with `fcntl` locks, which need it.
        lock = open(staging / STAGING_LOCK, "r+b")  # noqa: SIM115 (closed below)
    except FileNotFoundError:
        try:
            age = time.time() - staging.stat().st_mtime
        except FileNotFoundError:
            age = 0.0  # removed meanwhile by another export
        yield age > UNLOCKED_STAGING_MAX_AGE_S
        return
    except PermissionError:
        yield False  # another user's export: not ours to judge
        return
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False  # a running export holds it
            return
        yield True


def remove_stale_staging(export_dir: str | os.PathLike) -> list[Path]:
    """Removes the staging folders that killed exports left in `export_dir`.

    A folder is removed only if its name is exactly that of `export_translator`'s staging
    folders (`.<version>-` and 8 characters of `tempfile`'s alphabet, e.g. `.3-k2j_x9ab`) and no
    export is using it: a running export holds a lock on its `export.lock` (the system frees
    it when the process ends, even when killed), and a folder without that file counts as in
    use until it is `UNLOCKED_STAGING_MAX_AGE_S` seconds old (it is being created, or was left
    by an older version of this module). If a killed export had moved the version it was
    overwriting into its staging folder (as `old`) and that version folder is missing, the
    old version is put back first, so nothing is lost. Nothing else is touched.

    Args:
        export_dir: the model's folder.

    Returns:
        The staging folders removed.
    """
    export_dir = Path(export_dir)
    removed = []
    for staging in sorted(export_dir.iterdir()):
        match = STAGING_NAME.fullmatch(staging.name)
        if match is None or staging.is_symlink() or not staging.is_dir():
            continue
        with _claim_if_stale(staging) as stale:
            if not stale:
                continue
            target = export_dir / str(int(match.group(1)))
            with contextlib.suppress(FileNotFoundError):
                if (staging / "old").is_dir() and not target.exists():
                    os.rename(staging / "old", target)  # undoes the killed overwrite
            shutil.rmtree(staging, ignore_errors=True)
        removed.append(staging)
    return removed


def _next_version(export_dir: Path) -> int:
    versions = [int(p.name) for p in export_dir.iterdir() if re.fullmatch(r"\d+", p.name)]
    return max(versions, default=0) + 1


def export_translator(
    translator: Translator,
    export_dir: str | os.PathLike,
    version: int | None = None,
    overwrite: bool = False,
    warmup_sentences: Sequence[str] | None = None,
    dtype: str | None = "float32",
    metadata: dict | None = None,
) -> Path:
    """Writes the translator as a SavedModel in `export_dir/<version>/`, atomically.

    The SavedModel has two signatures, `serving_default` (the translator's search) and
    `greedy`, and TF Serving's warm-up requests (`keras_attention.serving.warmup_requests`): each
    signature on the first warm-up sentence alone, then on all of them.

    Written with `keras.export.ExportArchive`, which tracks the model's variables so that
    loaders restoring them by name (TF Serving, `saved_model_cli run`) find every one (a plain
    `tf.saved_model.save` of the model does not). The SavedModel goes to a temporary folder
    beside the target and is renamed into place only when complete, so a failed export
    leaves no half-written version folder.

    A killed export cannot remove its temporary folder (`.<version>-xxxxxxxx`); each export
    first removes those of exports that no longer run (see `remove_stale_staging`: only
    folders named exactly so, not locked by a running export, and restoring a version that a
    killed overwrite had moved aside). Exports running at the same time into one folder are
    safe: each leaves the others' temporary folders alone.

    Args:
        translator: the `Translator`.
        export_dir: the model's folder, as TF Serving's `--model_base_path`.
        version: the version number; default one more than the highest present (or 1).
        overwrite: replace an existing version (otherwise `FileExistsError`).
        warmup_sentences: the sentences of the warm-up requests, a few real inputs (the run's
            validation sentences, say); default `DEFAULT_WARMUP_SENTENCES`.
        dtype: the dtype policy the exported search computes in: a model that computes in
            another (a mixed-precision run's: bfloat16 or float16 with float32 weights) is
            exported as a copy with the same weights (`copy_with_dtype`). On this project's
            CPU, a bfloat16 export's greedy search was 118 sentences/s against 150 for its
            float32 copy, beam search equal. `None`: as the model computes.
        metadata: what the export says of itself (the languages, say), written as JSON to
            `assets.extra/keras_attention.json` beside TF Serving's warm-up file (with the
            search settings added: `beam_size`, `alpha`); read it with `export_metadata`.

    Raises:
        ValueError: if `version` is not a non-negative integer, or `warmup_sentences` is
            empty or holds a blank sentence (nothing is written).
        FileExistsError: if the version exists and `overwrite` is false.

    Returns:
        The path of the version folder.
    """
    if version is not None:
        check_int_at_least("version", version, 0)
    if warmup_sentences is None:
        warmup_sentences = DEFAULT_WARMUP_SENTENCES
    check_warmup_sentences(warmup_sentences)
    warmup_sentences = list(warmup_sentences)
    if dtype is not None and translator.model.dtype_policy.name != dtype:
        translator = translator.with_model(copy_with_dtype(translator.model, dtype))
    export_dir = Path(export_dir)
    export_dir.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(export_dir)
    version = _next_version(export_dir) if version is None else version
    target = export_dir / str(version)
    if target.exists() and not overwrite:
        raise FileExistsError(f"{target} exists; pass overwrite=True or another version")
    staging = Path(tempfile.mkdtemp(dir=export_dir, prefix=f".{version}-"))
    lock = None
    try:
        lock = _lock_staging(staging)  # held until the staging folder is gone
        archive = keras.export.ExportArchive()
        archive.track(translator.model)
        archive.track(translator.tokenizer)
        archive.add_endpoint(
            SIGNATURE_KEY, translator.translate_graph, input_signature=[SENTENCES_SPEC]
        )
        archive.add_endpoint(
            GREEDY_SIGNATURE_KEY, translator.greedy_graph, input_signature=[SENTENCES_SPEC]
        )
        archive.write_out(str(staging / "model"), verbose=False)
        write_warmup_requests(
            staging / "model", [SIGNATURE_KEY, GREEDY_SIGNATURE_KEY], warmup_sentences
        )
        described = {
            **(metadata or {}),
            "beam_size": translator.beam_size,
            "alpha": translator.alpha,
        }
        (staging / "model" / METADATA_FILE).write_text(json_text(described))
        move_folder_into_place(staging, target, overwrite)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if lock is not None:
            lock.close()
    return target


class ExportMetadata(typing.TypedDict, total=False):
    """`assets.extra/keras_attention.json`: what an export says of itself (the languages
    `runs.serving_check` records, and the search), other keys as `metadata` gave them."""

    source_language: str | None
    target_language: str | None
    beam_size: int
    alpha: float


def export_metadata(path: str | os.PathLike) -> dict:
    """What an export says of itself (`export_translator`'s `metadata`): `{}` for an export
    without it (written before it existed).

    Raises:
        CorruptFileError: naming the file if it is not a JSON object, or a field of
            `ExportMetadata` is of another type.
    """
    file = Path(path) / METADATA_FILE
    if not file.is_file():
        return {}
    return read_json_record(file, ExportMetadata)


def load_exported(path: str | os.PathLike, signature: str = SIGNATURE_KEY):
    """A signature of an exported translator (`serving_default` or `greedy`), loaded as TF
    Serving would.

    Only TensorFlow and tensorflow-text are needed (importing tensorflow-text registers its
    ops); call the result with `sentences=tf.constant([...])`.

    Raises:
        CorruptFileError: naming the damaged file of a SavedModel that does not load
            (`damaged_export_file`); TensorFlow's error if none is found damaged.
    """
    import tensorflow_text  # noqa: F401 (registers the SentencePiece ops)

    try:
        with literal_path(path) as readable:  # e.g. a folder named "run [1]"
            return tf.saved_model.load(readable).signatures[signature]
    except (OSError, LookupError, ValueError, tf.errors.OpError) as error:  # IndexError: cut
        damaged = damaged_export_file(path)
        if damaged is None:
            raise
        raise CorruptFileError(damaged) from error


def damaged_export_file(path: str | os.PathLike) -> str | None:
    """Which file of the SavedModel at `path` is damaged, and how, in words; `None` if its
    `saved_model.pb` parses with a MetaGraph and its variables read back (TensorFlow's own
    errors name none of them).
    """
    from google.protobuf.message import DecodeError
    from tensorflow.core.protobuf import saved_model_pb2

    path = Path(path)
    graph = path / "saved_model.pb"
    saved_model = saved_model_pb2.SavedModel()
    try:
        saved_model.ParseFromString(graph.read_bytes())
    except (OSError, DecodeError) as error:
        return f"{graph} is corrupt (not a SavedModel protocol buffer: {error})"
    if not saved_model.meta_graphs:
        return f"{graph} is corrupt: it holds no MetaGraph (empty, or cut short)"
    index = path / "variables" / "variables.index"
    if not index.is_file():
        return f"{index} is missing: the SavedModel has no variables"
    # The reader opens the data files as it reads them: all within the readable name.
    with literal_path(index.parent / "variables") as readable:
        return _damaged_variables(index, readable)


def _damaged_variables(index: Path, prefix: str) -> str | None:
    """Which file of the variables whose `variables.index` is `index` (read as the
    checkpoint `prefix`) is damaged, and how; `None` if every variable reads back."""
    try:
        reader = tf.train.load_checkpoint(prefix)
    except (OSError, ValueError, tf.errors.OpError) as error:
        return f"{index} is corrupt: {error}"
    try:
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)
    except (OSError, IndexError, ValueError, tf.errors.OpError) as error:  # IndexError: cut short
        data = ", ".join(str(file) for file in sorted(index.parent.glob("variables.data-*")))
        return f"{data or index.parent / 'variables.data-*'} is corrupt or missing: {error}"
    return None
