"""The rules of a run folder: it belongs to one configuration, its files and how to clear them.

`tools/train.py` resumes a run whose folder holds the same `config.json`, refuses one that
holds another (naming the settings that differ) and, with `--overwrite`, removes the old run's
files; after a kill, the half-done temporary files of its atomic writes are removed.
"""

import dataclasses
import json
import shutil
from pathlib import Path

from keras_attention.core.atomic_files import temporary_files
from keras_attention.runs.config import (
    PATH_SETTINGS,
    TrainConfig,
    absolute_path,
    check_saved_config,
)

# The files and folders of a run (`inspect_run_folder`); `--overwrite` removes them.
RUN_FILES = (
    "data",
    "corpus.json",
    "started_from.json",
    "adapter.lora.h5",
    "tokenizer.model",
    "tokenizer.recaser.tsv",
    "tokenizer.json",
    "backup",
    "checkpoints",
    "logs",
    "training_log.csv",
    "validation_bleu.json",
    "bleu.json",
    "test_metrics.json",
    "learning_curve.png",
    "export",
    "model.keras",
    "config.json",  # last: while it is there, the folder is still this run's
)
# Written with `atomic_path` or `write_bytes_atomically`: a kill can leave `.<name>.*`.
ATOMIC_FILES = (
    "config.json",
    "corpus.json",
    "started_from.json",
    "adapter.lora.h5",
    "tokenizer.model",
    "tokenizer.recaser.tsv",
    "tokenizer.json",
    "training_log.csv",
    "validation_bleu.json",
    "bleu.json",
    "test_metrics.json",
    "learning_curve.png",
    "model.keras",
)
# Settings that may differ between the starts of one run: where it is.
NOT_COMPARED = ("output_dir",)
# Settings used only once training is over (the search of the choice of weights, the test
# scores and the export): they may change until the run has chosen its weights.
SEARCH_SETTINGS = ("beam_size", "alpha")
# Settings whose dataset default changed after they were added: a `config.json` written
# before they existed means the library's behaviour of that time, not today's default.
ABSENT_MEANS = {
    "lowercase": False,
    "cooldown_epochs": 0,
    "mixed_precision": "float32",
    "subword_sampling": 0.0,
}
# Settings added with the recipes and a user's own files: an older `config.json` without
# them trained a named dataset's corpus in its own direction, so they are not compared.
ADDED_WITH_RECIPES = (
    "train",
    "valid",
    "test",
    "source_lang",
    "target_lang",
    "recipe",
    "stream",
)
# Values an older `config.json` holds for what today's library spells otherwise: `null`
# mixed precision was float32 before float32 became a value of its own.
LEGACY_VALUES = {"mixed_precision": {None: "float32"}}


def config_differences(
    saved: dict, config: "TrainConfig", ignore: tuple[str, ...] = ()
) -> list[str]:
    """The settings in which `config` differs from a run's saved `config.json`, one
    `"name: saved -> new"` each (sorted; `output_dir` and the settings in `ignore` are not
    compared).

    A setting that a newer version of the library added is absent from the `config.json` of
    an older run; that run trained with the setting's default for its dataset, so the
    default is what is compared (an older run resumes unless the new setting is changed),
    or the value `ABSENT_MEANS` gives for a setting whose default has changed since. A value
    that the library now spells otherwise (`LEGACY_VALUES`) is compared as today's spelling,
    and files and folders (`PATH_SETTINGS`) as absolute paths from the working folder.
    """
    current = json.loads(json.dumps(dataclasses.asdict(config)))
    missing = object()
    defaults = {**_defaults_of(saved.get("dataset")), **ABSENT_MEANS}
    differences = []
    legacy = {name for name in ADDED_WITH_RECIPES if name not in saved}
    for name in sorted((set(saved) | set(current)) - {*NOT_COMPARED, *ignore, *legacy}):
        old, new = saved.get(name, defaults.get(name, missing)), current.get(name, missing)
        if name in LEGACY_VALUES:
            old = LEGACY_VALUES[name].get(old, old)
        if name in PATH_SETTINGS:  # an older run's relative paths meant the working folder's
            old, new = absolute_path(old), absolute_path(new)
        if old != new:
            shown = ["(absent)" if v is missing else json.dumps(v) for v in (old, new)]
            differences.append(f"{name}: {shown[0]} -> {shown[1]}")
    return differences


def _defaults_of(dataset: object) -> dict:
    """Every setting's default for `dataset`, as `config.json` holds it (`{}` for a dataset
    this library does not know)."""
    try:
        resolved = TrainConfig(dataset=dataset).resolved()
    except (TypeError, ValueError):
        return {}
    return json.loads(json.dumps(dataclasses.asdict(resolved)))


def inspect_run_folder(output_dir: Path, config: "TrainConfig", overwrite: bool) -> bool:
    """Checks that a run with `config` may start in `output_dir`; writes nothing.

    A run folder belongs to one configuration: the same one resumes there, another is
    refused unless `overwrite` (then the old run's files are removed, by `remove_run_files`).
    Until the run has chosen its weights (`model.keras` is written last), its search
    settings (`SEARCH_SETTINGS`: beam size and length penalty) may change: the resumed run
    uses the new ones (`prepare_run` writes them to its `config.json`).

    Returns:
        Whether the folder holds this run already (its `config.json` is `config`'s).

    Raises:
        ValueError: the folder holds another run (naming the differing settings), files of a
            run without its `config.json`, a corrupt `config.json` (not JSON, or a field
            missing, unknown or of another type: `check_saved_config`), or trained weights
            without their tokenizer.
    """
    hint = (
        "start it with another output folder, or pass overwrite=True (tools/train.py "
        "--overwrite) to remove the old run's files and start afresh"
    )
    if output_dir.exists() and not output_dir.is_dir():
        raise ValueError(f"output folder {output_dir} is a file")
    if overwrite or not output_dir.is_dir():
        return False
    saved_path = output_dir / "config.json"
    if not saved_path.is_file():
        present = [name for name in RUN_FILES if (output_dir / name).exists()]
        if present:
            raise ValueError(
                f"{output_dir} holds files of a run ({', '.join(present)}) but no config.json, "
                f"so they may be another run's; {hint}"
            )
        return False
    try:
        saved = json.loads(saved_path.read_text())
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"{saved_path} is corrupt: not valid JSON ({error}); {hint}") from None
    if not isinstance(saved, dict):
        raise ValueError(f"{saved_path} is corrupt: not a JSON object; {hint}")
    check_saved_config(saved, saved_path)  # every field of its type, none unknown
    finished = (output_dir / "model.keras").exists()
    differences = config_differences(saved, config, () if finished else SEARCH_SETTINGS)
    if differences:
        raise ValueError(
            f"{output_dir} holds a run with other settings ({'; '.join(differences)}): the "
            f"same settings resume it; {hint}"
        )
    trained = [name for name in ("backup", "checkpoints", "model.keras")
               if (output_dir / name).exists()]  # fmt: skip
    if trained and not (output_dir / "tokenizer.model").is_file():
        raise ValueError(
            f"{output_dir} holds a run's weights ({', '.join(trained)}) but not its "
            f"tokenizer.model; {hint}"
        )
    return True


def remove_run_files(output_dir: Path) -> None:
    """Removes the files of a run from `output_dir` (`RUN_FILES` and the temporary files of
    its atomic writes), `config.json` last; leaves anything else."""
    for path in temporary_files(output_dir, list(ATOMIC_FILES)):
        _remove(path)
    for name in RUN_FILES:
        _remove(output_dir / name)


def remove_temporary_files(output_dir: Path) -> None:
    """Removes what the writes of a killed run left half-done (they are all atomic)."""
    for path in temporary_files(output_dir, list(ATOMIC_FILES)):
        _remove(path)
    names = ["epoch_*.weights.h5", "best.weights.h5"]
    for path in temporary_files(output_dir / "checkpoints", names):
        _remove(path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
