"""What the translate tool decodes with: a `Translator` over one run or preset folder, or
over several as an ensemble (their tokenizers checked identical), or an exported SavedModel's
signatures behind the same methods (`translate`, `n_best`, `sample`, `score`; alignments
need the model itself).
"""

import os
from pathlib import Path

import tensorflow as tf

from keras_attention.data.tokenizer import recaser_path
from keras_attention.decoding import Ensemble
from keras_attention.evaluation import load_saved_model
from keras_attention.models.preset_sources import (
    SAVED_MODEL_FILE,
    beam_search_settings,
    folder_kind,
    load_tokenizer,
    tokenizer_file,
)
from keras_attention.models.transformer import Transformer
from keras_attention.serving.export import (
    N_BEST_SIGNATURE_KEY,
    SAMPLE_SIGNATURE_KEY,
    SCORE_SIGNATURE_KEY,
)
from keras_attention.serving.translator import Translator


def check_same_tokenizer(folders: list[str | os.PathLike], option: str = "--run-dir") -> None:
    """Raises `ValueError` naming the files unless every folder's tokenizer (its
    SentencePiece model and recaser) is byte for byte the first one's."""
    first = tokenizer_file(folders[0])
    for folder in folders[1:]:
        other = tokenizer_file(folder)
        for mine, theirs in ((first, other), (recaser_path(first), recaser_path(other))):
            mine_bytes = mine.read_bytes() if mine.is_file() else None
            theirs_bytes = theirs.read_bytes() if theirs.is_file() else None
            if mine_bytes != theirs_bytes:
                raise ValueError(
                    f"{option} {folder}: its tokenizer file {theirs} differs from {mine} "
                    "(or one of them is missing); the models of an ensemble must share one "
                    "tokenizer (fine-tuned runs of one run do)"
                )


def load_ensemble(
    folders: list[str | os.PathLike], beam_size: int | None = None, alpha: float | None = None
) -> Translator:
    """A `Translator` over the models of several run or preset folders, averaged at every
    step (`keras_attention.decoding.Ensemble`), with the first folder's tokenizer and, by
    default, its beam search settings.

    Raises:
        ValueError: naming the files when the tokenizers differ, or a folder that is
            neither a run's nor a preset's.
    """
    check_same_tokenizer(folders)
    models = [Transformer.from_preset(folder) for folder in folders]
    tokenizer = load_tokenizer(folders[0], models[0])
    first_beam, first_alpha = beam_search_settings(folders[0])
    return Translator(
        Ensemble(models),
        tokenizer,
        first_beam if beam_size is None else beam_size,
        first_alpha if alpha is None else alpha,
    )


class SavedModelDecoder:
    """An exported translator's signatures behind `Translator`'s decoding methods.

    A SavedModel is a program: it is loaded only from a folder that holds nothing but a
    SavedModel (`preset_sources.folder_kind`), never from a run or preset folder that also
    holds a `saved_model.pb`.

    Args:
        path: an exported version folder.

    Raises:
        FileNotFoundError, ValueError: as `keras_attention.evaluation.load_saved_model`;
            `ValueError` naming `path` if it holds more than a SavedModel.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if (self.path / SAVED_MODEL_FILE).is_file():
            folder_kind(path)  # refuses a SavedModel beside other files
        self.translate_signature = load_saved_model(path)
        self.signatures = tf.saved_model.load(str(path)).signatures

    def _signature(self, name: str, what: str):
        if name not in self.signatures:
            raise ValueError(
                f"the SavedModel {self.path} has no {name!r} signature ({what}): it was "
                "exported before it existed; export the run again (tools/export.py)"
            )
        return self.signatures[name]

    def n_best_width(self) -> int:
        """The hypotheses of the `n_best` signature's lists (the export's beam size)."""
        signature = self._signature(N_BEST_SIGNATURE_KEY, "n-best lists")
        return int(signature.structured_outputs["translations"].shape[1])

    def translate(self, sentences):
        return self.translate_signature(sentences=tf.constant(sentences, tf.string))

    def n_best(self, sentences, num_hypotheses: int | None = None):
        result = self._signature(N_BEST_SIGNATURE_KEY, "n-best lists")(
            sentences=tf.constant(sentences, tf.string)
        )
        width = self.n_best_width()
        if num_hypotheses is not None and num_hypotheses > width:
            raise ValueError(
                f"--n-best {num_hypotheses}: the SavedModel {self.path} was exported with "
                f"beam size {width}, so its n-best lists hold at most {width}"
            )
        return {name: value[:, :num_hypotheses] for name, value in result.items()}

    def sample(self, sentences, num_samples=None, seed=0, temperature=1.0, top_k=0, top_p=1.0,
               first_index=0):  # fmt: skip
        if num_samples not in (None, 1):
            raise ValueError(
                "a SavedModel's sample signature draws one translation a sentence; for "
                "several (--sample with --n-best), give the run or preset folder"
            )
        result = self._signature(SAMPLE_SIGNATURE_KEY, "sampling")(
            sentences=tf.constant(sentences, tf.string),
            seed=tf.constant(seed + first_index, tf.int64),
            temperature=tf.constant(temperature, tf.float32),
            top_k=tf.constant(top_k, tf.int32),
            top_p=tf.constant(top_p, tf.float32),
        )
        if num_samples is None:
            return result
        return {name: value[:, None] for name, value in result.items()}

    def score(self, sentences, targets):
        return self._signature(SCORE_SIGNATURE_KEY, "scoring")(
            sentences=tf.constant(sentences, tf.string), targets=tf.constant(targets, tf.string)
        )

    def align(self, sentences, translations):
        raise ValueError(
            f"--alignments needs the model's attention: give a run or preset folder, not "
            f"the SavedModel {self.path}"
        )
