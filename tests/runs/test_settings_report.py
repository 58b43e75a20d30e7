"""`runs.settings_report`: the lines a run starts with say where each split and setting truly
came from, with readable numbers and units in the singular for one."""

import pytest

from keras_attention.runs import recipes
from keras_attention.runs.config import TrainConfig
from keras_attention.runs.corpus import RunCorpus
from keras_attention.runs.recipes import CorpusStats
from keras_attention.runs.settings_report import settings_lines


def pairs(count: int) -> tuple[list[str], list[str]]:
    return [f"source {i}" for i in range(count)], [f"target {i}" for i in range(count)]


def run_corpus(
    stats: CorpusStats, val: int, test: int, held_out=(), removed=0, blank=0
) -> RunCorpus:
    corpus = {"train": pairs(stats.pairs), "val": pairs(val), "test": pairs(test)}
    return RunCorpus(None, corpus, None, tuple(held_out), removed, stats, blank)


def lines_of(given: TrainConfig, corpus: RunCorpus, **replaced) -> list[str]:
    config = given.resolved(corpus.stats)
    for name, value in replaced.items():
        setattr(config, name, value)
    return settings_lines(given, config, corpus)


@pytest.fixture(autouse=True)
def bfloat16_is_fast(monkeypatch):
    monkeypatch.setattr(recipes, "bfloat16_is_fast", lambda: True)


def test_a_named_corpus_splits_are_its_own_and_the_epochs_derive_the_schedule():
    # The default command's corpus with `--epochs 2` and the small recipe (48 epochs, the
    # last 16 a cool-down, warm-up 4000, scale 2.5).
    given = TrainConfig(recipe="small", epochs=2)
    lines = lines_of(given, run_corpus(CorpusStats(19_000, 20_000), val=500, test=500))
    assert lines[1] == "validation split: 500 pairs, the generated corpus's own split"
    assert lines[2] == "test split: 500 pairs, the generated corpus's own split"
    assert (
        "warm-up: 167 updates (derived from --epochs 2: the recipe's 4000 scaled by 2/48)" in lines
    )
    assert "cool-down: 1 epoch (derived from --epochs 2: the recipe's 16 scaled by 2/48)" in lines
    scale = [line for line in lines if line.startswith("learning-rate scale: ")]
    assert scale == [
        "learning-rate scale: 0.511 (derived from --epochs 2 with the warm-up: the recipe's "
        "2.5, scaled to keep its peak learning rate)"
    ]
    assert "epochs: 2 (given)" in lines and "precision: mixed_bfloat16 (recipe)" in lines
    assert "vocabulary: 4000 subwords (recipe)" in lines


def test_given_and_held_out_splits_and_counts_of_one():
    given = TrainConfig(train=[["a.de", "b.en"]], valid=["v.de", "v.en"], epochs=3)
    corpus = run_corpus(CorpusStats(1, 1), val=1, test=2, held_out=["test"], removed=1, blank=3)
    lines = lines_of(given, corpus)
    assert lines[0] == "corpus: 1 training pair, 1 distinct word, ? -> ?"
    assert lines[1:4] == [
        "validation split: 1 pair, given",
        "test split: 2 pairs, held out of the training pairs",
        "left out of training: 1 pair removed as copies of a validation or test source, "
        "3 pairs with a blank side",
    ]


def test_settings_that_follow_the_corpus_or_the_machine_say_so(monkeypatch):
    given = TrainConfig(train=[["a.de", "b.en"]])
    corpus = run_corpus(CorpusStats(300, 814), val=20, test=20, held_out=["val", "test"])
    lines = lines_of(given, corpus)
    assert "recipe: closed-vocabulary (chosen by the corpus's size)" in lines
    assert "epochs: 100 (recipe, for the corpus's 300 training pairs)" in lines
    assert "vocabulary: 300 subwords (recipe, for the corpus's 814 distinct words)" in lines
    assert "cool-down: 0 epochs (recipe)" in lines and "learning-rate scale: 1.0 (recipe)" in lines
    monkeypatch.setattr(recipes, "bfloat16_is_fast", lambda: False)
    small = TrainConfig(train=[["a.de", "b.en"]], recipe="small")
    lines = lines_of(small, corpus)
    assert "precision: float32 (the recipe's mixed_bfloat16 is slow on this machine)" in lines
    # A resumed run keeps the precision it started with on another machine.
    lines = lines_of(small, corpus, mixed_precision="mixed_bfloat16")
    assert "precision: mixed_bfloat16 (kept from the run's start)" in lines


def test_steps_derive_the_warm_up_of_a_recipe_trained_by_steps():
    given = TrainConfig(train=[["a.de", "b.en"]], recipe="large", train_steps=1000)
    corpus = run_corpus(CorpusStats(10_000, 9_000), val=20, test=20, held_out=["val", "test"])
    lines = lines_of(given, corpus)
    assert "steps: 1000 (given)" in lines
    assert (
        "warm-up: 40 updates (derived from --train-steps 1000: the recipe's 4000 scaled by "
        "1000/100000)" in lines
    )
    assert not any(line.startswith("epochs:") for line in lines)
