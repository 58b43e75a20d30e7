"""A `Translator` as a SavedModel for TensorFlow Serving: strings in, strings out.

The `serving_default` signature takes `sentences` (a vector, rank 1, of `tf.string`; any other
rank is refused with an error giving it) and returns `translations` (`tf.string`, one per
sentence) and `scores` (`float32`, the length-penalised beam score; the sum of log-probabilities
for greedy search, `beam_size=1`). Beside it:

- `greedy` (`sentences`): `translations`, `scores` `(batch,)` by greedy search, for latency;
- `n_best` (`sentences`): `translations`, `scores` `(batch, beam_size)`, the n-best lists;
- `sample` (`sentences`, and scalars `seed` int64, `temperature` float32, `top_k` int32,
  `top_p` float32, where 0 and 1.0 mean no cut): `translations`, `scores` `(batch,)`, one
  sample a sentence and its log-probability under the model;
- `score` (`sentences`, `targets`): `scores` (length-penalised), `log_probs`, `per_token`
  and `lengths` `(batch,)`, the targets' forced-decoding scores.

The subword tokenizer
(tensorflow-text), the search and the detokenizer are all in the graph
(`keras_attention.serving.translator`); only TensorFlow and tensorflow-text ops are used, so TF
Serving (which links both) runs it with no Python. The export carries TF Serving's warm-up
requests (`assets.extra/tf_serving_warmup_requests`, `keras_attention.serving.warmup_requests`)
and is written through a locked staging folder, renamed into place when complete.
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
import numpy as np
import tensorflow as tf

from keras_attention.core.atomic_files import json_text, move_folder_into_place
from keras_attention.core.checks import check_int_at_least
from keras_attention.core.file_checks import CorruptFileError, read_json_record
from keras_attention.core.literal_paths import literal_path
from keras_attention.decoding.ensemble import Ensemble
from keras_attention.models.dtype_copy import copy_with_dtype
from keras_attention.models.lora import lora_layers
from keras_attention.serving.translator import (
    SAMPLE_SPECS,
    SENTENCES_SPEC,
    TARGETS_SPEC,
    Translator,
)
from keras_attention.serving.warmup_requests import (
    DEFAULT_WARMUP_SENTENCES,
    check_warmup_sentences,
    write_warmup_requests,
)

SIGNATURE_KEY = "serving_default"
# The export's description of itself (languages, search), beside TF Serving's warm-up file.
METADATA_FILE = "assets.extra/keras_attention.json"
GREEDY_SIGNATURE_KEY = "greedy"
N_BEST_SIGNATURE_KEY = "n_best"
SAMPLE_SIGNATURE_KEY = "sample"
SCORE_SIGNATURE_KEY = "score"
# The warm-up requests' inputs beyond the sentences: a plain sample, and each sentence scored
# as its own translation.
WARMUP_INPUTS = {
    SAMPLE_SIGNATURE_KEY: lambda batch: {
        "seed": np.int64(0),
        "temperature": np.float32(1.0),
        "top_k": np.int32(0),
        "top_p": np.float32(1.0),
    },
    SCORE_SIGNATURE_KEY: lambda batch: {"targets": np.array(batch, dtype=object)},
}
# A staging folder of `export_translator`: `tempfile.mkdtemp(prefix=f".{version}-")`, which
# adds 8 characters of `tempfile`'s alphabet; its lock file is held while the export runs.
STAGING_NAME = re.compile(r"\.(\d+)-[a-z0-9_]{8}")
STAGING_LOCK = "export.lock"
# A staging folder without its lock file is either being created (for microseconds) or was
# left by an export killed before locks existed; it is removed only once this old.
UNLOCKED_STAGING_MAX_AGE_S = 3600


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

    The SavedModel has the signatures of the module's table (`serving_default`, the
    translator's search, then `greedy`, `n_best`, `sample` and `score`), and TF Serving's
    warm-up requests (`keras_attention.serving.warmup_requests`): each signature on the first
    warm-up sentence alone, then on all of them. An `Ensemble` translator exports as one
    SavedModel holding every member; a LoRA model exports its merged kernels (a plain copy,
    no LoRA ops).

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
    translator = translator.with_model(plain_model(translator.model, dtype))
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
        for model in members(translator.model):
            archive.track(model)
        archive.track(translator.tokenizer)
        endpoints = {
            SIGNATURE_KEY: (translator.translate_graph, [SENTENCES_SPEC]),
            GREEDY_SIGNATURE_KEY: (translator.greedy_graph, [SENTENCES_SPEC]),
            N_BEST_SIGNATURE_KEY: (translator.n_best_graph, [SENTENCES_SPEC]),
            SAMPLE_SIGNATURE_KEY: (translator.sample_graph, SAMPLE_SPECS),
            SCORE_SIGNATURE_KEY: (translator.score_graph, [SENTENCES_SPEC, TARGETS_SPEC]),
        }
        for name, (function, specs) in endpoints.items():
            archive.add_endpoint(name, function, input_signature=specs)
        archive.write_out(str(staging / "model"), verbose=False)
        write_warmup_requests(
            staging / "model", list(endpoints), warmup_sentences, other_inputs=WARMUP_INPUTS
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


def members(model) -> list:
    """The models of an `Ensemble`, or `[model]`."""
    return list(model.models) if isinstance(model, Ensemble) else [model]


def plain_model(model, dtype: str | None):
    """`model` as an export holds it: computing in `dtype` (`None`: as it does), its LoRA
    merged into its kernels (a plain copy, no LoRA ops in the graph); an `Ensemble` member by
    member."""
    if isinstance(model, Ensemble):
        return Ensemble([plain_model(member, dtype) for member in model.models], model.weights)
    if (dtype is not None and model.dtype_policy.name != dtype) or lora_layers(model):
        return copy_with_dtype(model, dtype or model.dtype_policy.name)
    return model


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
