"""`config_differences`: which settings of a new run differ from a run folder's `config.json`;
and a saved tokenizer that does not lowercase as the run does."""

import dataclasses
import json
from pathlib import Path

import pytest

from keras_attention.runs import recipes
from keras_attention.runs.config import TrainConfig
from keras_attention.runs.folder import config_differences, inspect_run_folder


def saved_config(config: TrainConfig, *without: str) -> dict:
    """`config` as `config.json` holds it, less the settings named in `without` (as the
    `config.json` of a run written before those settings existed)."""
    saved = json.loads(json.dumps(dataclasses.asdict(config)))
    for name in without:
        del saved[name]
    return saved


def test_the_same_settings_do_not_differ():
    config = TrainConfig(dataset="multi30k", epochs=7).resolved()
    assert config_differences(saved_config(config), config) == []


def test_a_changed_setting_is_named_with_both_values():
    config = TrainConfig(dataset="multi30k", epochs=7).resolved()
    other = dataclasses.replace(config, epochs=9, seed=3)
    assert config_differences(saved_config(config), other) == ["epochs: 7 -> 9", "seed: 0 -> 3"]


def test_a_setting_newer_than_the_run_compares_as_its_dataset_default():
    # A run saved before `backup_every_steps` existed backed up at epoch ends only (`None`).
    config = TrainConfig(dataset="multi30k", epochs=7).resolved()
    old_run = saved_config(config, "backup_every_steps", "keep_checkpoints")
    assert config_differences(old_run, config) == []
    changed = dataclasses.replace(config, backup_every_steps=50)
    assert config_differences(old_run, changed) == ["backup_every_steps: null -> 50"]


def test_lowercase_absent_from_an_older_run_means_cased_text():
    # Multi30k runs lowercase by default now; a run saved before the setting existed did not.
    config = TrainConfig(dataset="multi30k", epochs=7).resolved()
    assert config.lowercase is True
    old_run = saved_config(dataclasses.replace(config, lowercase=False), "lowercase")
    assert config_differences(old_run, config) == ["lowercase: false -> true"]
    assert config_differences(old_run, dataclasses.replace(config, lowercase=False)) == []
    generated = TrainConfig(dataset="generated").resolved()
    assert generated.lowercase is False
    assert config_differences(saved_config(generated, "lowercase"), generated) == []


def test_an_older_multi30k_run_trained_in_float32_without_a_cool_down(monkeypatch):
    # Multi30k trains in bfloat16 with a cool-down now (where bfloat16 is fast); runs saved
    # before either setting existed, or with `null` mixed precision, trained in float32 at
    # the full rate.
    monkeypatch.setattr(recipes, "bfloat16_is_fast", lambda: True)
    config = TrainConfig(dataset="multi30k").resolved()
    assert (config.mixed_precision, config.cooldown_epochs) == ("mixed_bfloat16", 16)
    as_then = dataclasses.replace(config, mixed_precision="float32", cooldown_epochs=0)
    absent = saved_config(as_then, "mixed_precision", "cooldown_epochs")
    null = {**saved_config(as_then), "mixed_precision": None}
    for old_run in (absent, null):
        assert config_differences(old_run, as_then) == []
        assert config_differences(old_run, config) == [
            "cooldown_epochs: 0 -> 16",
            'mixed_precision: "float32" -> "mixed_bfloat16"',
        ]


def test_the_search_may_change_until_the_run_has_chosen_its_weights(tmp_path: Path):
    config = TrainConfig(dataset="multi30k", epochs=7, output_dir=str(tmp_path)).resolved()
    (tmp_path / "config.json").write_text(json.dumps(saved_config(config)))
    (tmp_path / "tokenizer.model").write_bytes(b"a tokenizer")
    other_search = dataclasses.replace(config, beam_size=8, alpha=config.alpha + 0.5)
    assert inspect_run_folder(tmp_path, other_search, overwrite=False)  # resumes
    with pytest.raises(ValueError, match="epochs: 7 -> 9"):  # training settings may not
        inspect_run_folder(tmp_path, dataclasses.replace(other_search, epochs=9), False)
    (tmp_path / "model.keras").write_bytes(b"the chosen weights")
    changed = f"alpha: {config.alpha} -> {config.alpha + 0.5}; beam_size: 5 -> 8"
    with pytest.raises(ValueError, match=changed):
        inspect_run_folder(tmp_path, other_search, overwrite=False)
    assert inspect_run_folder(tmp_path, config, overwrite=False)


def test_a_setting_this_library_does_not_know_is_shown_absent():
    config = TrainConfig(dataset="generated").resolved()
    saved = {**saved_config(config), "future_setting": 4}
    assert config_differences(saved, config) == ["future_setting: 4 -> (absent)"]
    unknown_dataset = {**saved_config(config, "epochs"), "dataset": "wmt99"}
    assert config_differences(unknown_dataset, config) == [
        'dataset: "wmt99" -> "generated"',
        "epochs: (absent) -> 5",
    ]


def test_a_tokenizer_that_does_not_match_the_run_lowercasing_is_named(tmp_path: Path):
    from keras_attention.data.tokenizer import SubwordTokenizer
    from keras_attention.runs.prepare import _load_tokenizer

    german = ["Ein Mann sieht einen Hund.", "Zwei Hunde sehen einen Mann."] * 20
    path = SubwordTokenizer.train(german, 20, recase_texts=german).save(
        tmp_path / "tokenizer.model"
    )
    lowercased = TrainConfig(lowercase=True)
    assert _load_tokenizer(lowercased, path).lowercase
    with pytest.raises(ValueError, match="lowercases but the run has lowercase=False"):
        _load_tokenizer(TrainConfig(lowercase=False), path)
    (tmp_path / "tokenizer.recaser.tsv").unlink()  # lost: the run would train on cased text
    with pytest.raises(ValueError, match=r"tokenizer.recaser.tsv, is missing"):
        _load_tokenizer(lowercased, path)
