"""The parallel corpora the library knows by name.

Importing it loads neither Keras nor TensorFlow (the readers of Multi30k and of shards are
imported when used), so that a tool can offer `DATASETS` before TensorFlow starts.
"""

import os
from pathlib import Path

from keras_attention.data.generated_corpus import generated_splits

DATASETS = ("generated", "multi30k", "shards")


def load_corpus(
    name: str = "generated",
    data_dir: str | os.PathLike | None = None,
    seed: int = 0,
    train_pairs: int | None = None,
) -> dict[str, tuple[list[str], list[str]]]:
    """Loads a named corpus as `{"train": (sources, targets), "val": ..., "test": ...}`.

    Args:
        name: `"generated"` (the project's own English-German corpus, made offline),
            `"multi30k"` (English-German; local files in `data_dir`, else downloaded) or
            `"shards"` (`data_dir`'s `val` and `test` files; its training shards are
            streamed, and the training split is empty here).
        data_dir: folder of the Multi30k files.
        seed: the generated corpus's seed.
        train_pairs: keep only the first `train_pairs` training pairs (`None`: all; 0: none,
            for a caller that needs only the validation and test splits). The generated
            corpus then makes only those, and its other splits do not change.

    Raises:
        ValueError: for an unknown name or a negative `train_pairs`.
    """
    if train_pairs is not None and train_pairs < 0:
        raise ValueError(f"train_pairs must be None or >= 0; got train_pairs={train_pairs}")
    if name == "generated":
        sizes = {} if train_pairs is None else {"num_train": train_pairs}
        splits = generated_splits(seed=seed, **sizes)
        return {
            split: ([s for s, _ in pairs], [t for _, t in pairs]) for split, pairs in splits.items()
        }
    if name == "shards":
        # The training split is streamed (`data.streaming.train_shards`), not loaded.
        if data_dir is None:
            raise ValueError("dataset='shards' needs data_dir, the folder of the shards")
        from keras_attention.data.streaming import read_parallel

        folder = Path(data_dir)
        corpus = {"train": ([], [])}
        for split in ("val", "test"):
            corpus[split] = read_parallel(folder / f"{split}.en", folder / f"{split}.de")
        return corpus
    if name == "multi30k":
        from keras_attention.data.multi30k import load_multi30k

        corpus = load_multi30k(data_dir)
        if train_pairs is not None:
            sources, targets = corpus["train"]
            corpus["train"] = (sources[:train_pairs], targets[:train_pairs])
        return corpus
    raise ValueError(f"dataset must be one of {DATASETS}; got dataset={name!r}")
