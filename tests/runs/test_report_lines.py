"""`runs.report_lines`: the result lines of a run, in words, without Python reprs."""

import dataclasses

from keras_attention.runs.config import TrainConfig
from keras_attention.runs.report_lines import (
    config_line,
    final_weights_line,
    metrics_text,
    validation_line,
)

SCORES = {"bleu": 91.749123, "chrf": 95.0987, "bleu_lowercase": 92.5, "bleu_tokenized": 93.25}


def test_validation_line_gives_every_score_rounded_without_a_dict():
    line = validation_line("last", SCORES)
    assert line == (
        "validation (last weights): BLEU 91.75, chrF 95.10, BLEU lowercased 92.50, "
        "BLEU tokenized 93.25"
    )
    assert "{" not in line and "'" not in line


def test_final_weights_line_names_the_winner_and_its_bleu_and_chrf():
    validation = {"last": {"bleu": 1.0, "chrf": 2.0}, "best_3": SCORES}
    assert final_weights_line("best_3", validation) == (
        "final weights: best_3 (validation BLEU 91.75, chrF 95.10)"
    )


def test_metrics_text_shows_a_missing_value_as_n_a():
    assert metrics_text({"loss": 2.0, "perplexity": None}) == "loss 2.0000, perplexity n/a"


def test_config_line_is_short_and_points_to_the_full_settings():
    config = dataclasses.asdict(TrainConfig(output_dir="runs/x", preset="tiny", epochs=2))
    line = config_line(config)
    assert line.startswith("config: generated corpus, preset tiny, 2 epochs")
    assert line.endswith("(all settings: runs/x/config.json, or --verbose)")
    assert len(line) < 200 and "{" not in line
    own = dataclasses.asdict(TrainConfig(train=[["a.en", "a.de"]], train_steps=50))
    assert config_line(own).startswith("config: your corpus, ") and "50 steps" in config_line(own)
