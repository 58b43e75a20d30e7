"""The rule that picks a run's settings from its corpus's size, given settings winning and the
settings that follow the schedule's length following it."""

import dataclasses
import os
from pathlib import Path

import pytest

from keras_attention.runs import recipes
from keras_attention.runs.config import TrainConfig
from keras_attention.runs.corpus import load_run_corpus
from keras_attention.runs.recipes import (
    RECIPES,
    CorpusStats,
    choose_recipe,
    follow_schedule,
    recipe_settings,
)


@pytest.mark.parametrize(
    "pairs, words, streamed, recipe",
    [
        (200, 900, False, "closed-vocabulary"),
        (20_000, 1_500, False, "closed-vocabulary"),  # the generated corpus
        (29_000, 37_000, False, "small"),  # Multi30k
        (250_000, 90_000, False, "small"),
        (300_000, 90_000, False, "medium"),
        (3_000_000, 500_000, False, "large"),
        (50_000, 20_000, True, "large"),
    ],
)
def test_the_rule_follows_the_corpus_size(pairs: int, words: int, streamed: bool, recipe: str):
    assert choose_recipe(CorpusStats(pairs, words, streamed)) == recipe


def test_the_vocabulary_and_epochs_follow_the_corpus():
    assert recipe_settings("small", CorpusStats(29_000, 37_000))["vocabulary_size"] == 4000
    assert recipe_settings("small", CorpusStats(8_000, 6_000))["vocabulary_size"] == 2000
    tiny = recipe_settings("closed-vocabulary", CorpusStats(180, 700))
    assert tiny["vocabulary_size"] == 200 and tiny["epochs"] == 100
    generated = recipe_settings("closed-vocabulary", CorpusStats(20_000, 1_300))
    assert generated["epochs"] == 5 and generated["vocabulary_size"] == 400
    # The table itself is not changed by a corpus.
    assert RECIPES["small"]["vocabulary_size"] == 4000


def test_one_epoch_scales_the_schedule_instead_of_failing():
    settings = recipe_settings("small")
    one = follow_schedule(settings, {"epochs": 1})
    assert one["epochs"] == 1 and one["cooldown_epochs"] == 0
    assert one["warmup_steps"] == round(4000 / 48)
    # The same peak learning rate, scale / sqrt(warm-up), as the recipe's.
    peak = settings["learning_rate_scale"] / settings["warmup_steps"] ** 0.5
    assert one["learning_rate_scale"] / one["warmup_steps"] ** 0.5 == pytest.approx(peak, rel=1e-5)
    assert one["validation_bleu_every"] == 1 and one["average"] == []
    half = follow_schedule(settings, {"epochs": 24})
    assert half["cooldown_epochs"] == 8 and half["warmup_steps"] == 2000
    given = follow_schedule(settings, {"epochs": 24, "cooldown_epochs": 3, "warmup_steps": 10})
    assert (given["cooldown_epochs"], given["warmup_steps"]) == (3, 10)
    assert given["learning_rate_scale"] == settings["learning_rate_scale"]
    longer = follow_schedule(settings, {"epochs": 96})
    assert longer["cooldown_epochs"] == 16 and longer["warmup_steps"] == 4000


def test_steps_replace_epochs_and_epochs_replace_steps():
    large = recipe_settings("large")
    by_epochs = follow_schedule(large, {"epochs": 2})
    assert "train_steps" not in by_epochs and by_epochs["epochs"] == 2
    by_steps = follow_schedule(recipe_settings("small"), {"train_steps": 500})
    assert "epochs" not in by_steps and by_steps["train_steps"] == 500
    assert follow_schedule(large, {"train_steps": 4})["save_every_steps"] == 4
    assert follow_schedule(large, {"train_steps": 3000})["save_every_steps"] == 1500
    assert follow_schedule(large, {"train_steps": 10_000})["save_every_steps"] == 2000


def test_a_config_resolves_with_its_recipe_and_given_settings_win(monkeypatch):
    monkeypatch.setattr(recipes, "bfloat16_is_fast", lambda: True)
    stats = CorpusStats(29_000, 37_000)
    config = TrainConfig(train=[["a.de", "b.en"]], epochs=1, preset="small").resolved(stats)
    assert config.recipe == "small" and config.preset == "small"
    assert config.epochs == 1 and config.cooldown_epochs == 0
    assert config.lowercase is True and config.mixed_precision == "mixed_bfloat16"
    assert config.model_overrides == {"norm_first": True}
    config.validate()
    monkeypatch.setattr(recipes, "bfloat16_is_fast", lambda: False)
    assert TrainConfig(train=[["a", "b"]]).resolved(stats).mixed_precision == "float32"
    forced = TrainConfig(train=[["a", "b"]], recipe="closed-vocabulary").resolved(stats)
    assert forced.recipe == "closed-vocabulary" and forced.epochs == 5


MULTI30K = os.environ.get("KERAS_ATTENTION_MULTI30K")


@pytest.mark.skipif(not MULTI30K, reason="needs KERAS_ATTENTION_MULTI30K (set by .ci/run)")
def test_multi30k_as_plain_files_gets_the_tuned_recipe_of_the_named_corpus():
    folder = Path(MULTI30K)

    def resolved(config: TrainConfig) -> dict:
        settings = dataclasses.asdict(config.resolved(load_run_corpus(config).stats))
        corpus = ("dataset", "data_dir", "train", "valid", "test", "source_lang", "target_lang")
        return {name: value for name, value in settings.items() if name not in corpus}

    named = resolved(TrainConfig(dataset="multi30k", data_dir=str(folder)))
    files = resolved(
        TrainConfig(
            train=[[str(folder / "train.en"), str(folder / "train.de")]],
            valid=[str(folder / "val.en"), str(folder / "val.de")],
            test=[str(folder / "test2016.en"), str(folder / "test2016.de")],
        )
    )
    assert files == named
    assert named["recipe"] == "small" and named["vocabulary_size"] == 4000
    assert named["epochs"] == 48 and named["lowercase"] is True
