"""The corpus registry: corpora loaded by name as aligned train/val/test lists."""

import pytest

from keras_attention.data.datasets import DATASETS, load_corpus
from keras_attention.data.generated_corpus import generated_splits
from keras_attention.data.multi30k import load_multi30k
from tests.data.test_multi30k import MULTI30K_DIR, needs_multi30k

SPLITS = {"train", "val", "test"}


def assert_aligned_splits(corpus: dict) -> None:
    """Three splits of `(sources, targets)`: two lists of non-empty strings of one length."""
    assert set(corpus) == SPLITS
    for sources, targets in corpus.values():
        assert isinstance(sources, list) and isinstance(targets, list)
        assert len(sources) == len(targets) > 0
        assert all(isinstance(text, str) and text.strip() for text in sources + targets)


@pytest.mark.parametrize("kwargs, seed", [({}, 0), ({"name": "generated", "seed": 3}, 3)])
def test_generated_corpus_splits(kwargs, seed):
    corpus = load_corpus(**kwargs)  # "generated" is the default
    assert_aligned_splits(corpus)
    for split, pairs in generated_splits(seed=seed).items():
        assert list(zip(*corpus[split], strict=True)) == pairs
    train, val, test = (set(corpus[split][0]) for split in ("train", "val", "test"))
    assert not (train & val or train & test or val & test)


@needs_multi30k
def test_multi30k_corpus_from_a_folder():
    corpus = load_corpus("multi30k", data_dir=MULTI30K_DIR)
    assert_aligned_splits(corpus)
    assert corpus == load_multi30k(MULTI30K_DIR)


@pytest.mark.parametrize("name", ["wmt14", "Generated", "multi30k_de", ""])
def test_unknown_dataset_raises_naming_it(name):
    with pytest.raises(ValueError, match=f"dataset={name!r}") as error:
        load_corpus(name)
    assert all(known in str(error.value) for known in DATASETS)


def test_train_pairs_keeps_a_prefix_and_leaves_the_other_splits():
    whole = load_corpus("generated", seed=2)
    for count in (0, 7):
        part = load_corpus("generated", seed=2, train_pairs=count)
        assert part["train"] == tuple(side[:count] for side in whole["train"])
        assert part["val"] == whole["val"] and part["test"] == whole["test"]


@needs_multi30k
def test_train_pairs_cuts_multi30k_training_split():
    part = load_corpus("multi30k", data_dir=MULTI30K_DIR, train_pairs=5)
    whole = load_multi30k(MULTI30K_DIR)
    assert part["train"] == tuple(side[:5] for side in whole["train"])
    assert part["test"] == whole["test"]


def test_negative_train_pairs_is_named():
    with pytest.raises(ValueError, match="train_pairs=-1"):
        load_corpus("generated", train_pairs=-1)
