"""`TrainConfig`: the settings of a run, checked (`runs/config.py`)."""

import pytest

from keras_attention.runs.config import TrainConfig


def test_step_settings_are_checked_and_make_the_rounds():
    config = TrainConfig(train_steps=12, save_every_steps=4).resolved()
    config.validate()
    assert config.epochs == 3  # rounds
    assert TrainConfig(train_steps=12).resolved().save_every_steps == 12  # one round
    cases = [
        (dict(train_steps=12, save_every_steps=5), "train_steps must be a multiple"),
        (dict(train_steps=12, save_every_steps=4, accumulate_steps=3), "whole updates"),
        (dict(save_every_steps=4), "save_every_steps needs train_steps"),
        (dict(stream=True), "it trains by steps, give train_steps"),
        (dict(dataset="shards", data_dir=".", epochs=2), "it trains by steps"),
        (dict(train_steps=0), "train_steps"),
        (dict(keep_checkpoints=2, average=[3]), "keep_checkpoints=2 is fewer than the 3"),
    ]
    for settings, message in cases:
        with pytest.raises(ValueError, match=message):
            TrainConfig(**settings).resolved().validate()
