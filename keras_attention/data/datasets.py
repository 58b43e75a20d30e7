"""The parallel corpora the library knows by name."""

import os

from keras_attention.data.generated_corpus import generated_splits
from keras_attention.data.multi30k import load_multi30k

DATASETS = ("generated", "multi30k")


def load_corpus(
    name: str = "generated", data_dir: str | os.PathLike | None = None, seed: int = 0
) -> dict[str, tuple[list[str], list[str]]]:
    """Loads a named corpus as `{"train": (sources, targets), "val": ..., "test": ...}`.

    Args:
        name: `"generated"` (the project's own English-German corpus, made offline) or
            `"multi30k"` (English-German; local files in `data_dir`, else downloaded).
        data_dir: folder of the Multi30k files.
        seed: the generated corpus's seed.

    Raises:
        ValueError: for an unknown name.
    """
    if name == "generated":
        splits = generated_splits(seed=seed)
        return {
            split: ([s for s, _ in pairs], [t for _, t in pairs]) for split, pairs in splits.items()
        }
    if name == "multi30k":
        return load_multi30k(data_dir)
    raise ValueError(f"dataset must be one of {DATASETS}; got dataset={name!r}")
