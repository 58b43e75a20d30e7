"""The end-of-run choice of weights on validation data, and the learning-curve figure."""

import csv
import logging
import math
from pathlib import Path

import keras
import numpy as np
import pytest

import keras_attention.runs.selection as selection_module
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.runs.learning_curve import plot_learning_curve, read_log
from keras_attention.runs.selection import (
    candidate_checkpoints,
    epoch_checkpoints,
    select_weights,
)
from tests.scripts.tiny_transformer import tiny_transformer

SENTENCES = ["a man rides a bike", "two dogs play", "ein mann fährt rad", "zwei hunde spielen"]


def test_epoch_checkpoints_are_numbered(tmp_path: Path):
    for name in ("epoch_002.weights.h5", "epoch_010.weights.h5", "epoch_1000.weights.h5",
                 "best.weights.h5", "epoch_x.weights.h5"):  # fmt: skip
        (tmp_path / name).write_bytes(b"")
    found = epoch_checkpoints(tmp_path)
    assert list(found) == [2, 10, 1000]
    assert found[10].name == "epoch_010.weights.h5"


def test_candidates():
    checkpoints = {e: Path(f"epoch_{e:03d}.weights.h5") for e in range(1, 9)}
    bleu = {2: 10.0, 4: 30.0, 6: 20.0, 8: 25.0}
    candidates = candidate_checkpoints(checkpoints, bleu, average=[3, 5, 20])
    assert candidates["best"] == [checkpoints[4]]
    assert candidates["average_last_3"] == [checkpoints[e] for e in (6, 7, 8)]
    assert candidates["average_last_5"] == [checkpoints[e] for e in (4, 5, 6, 7, 8)]
    assert candidates["average_best_3"] == [checkpoints[e] for e in (4, 6, 8)]
    assert "average_best_5" not in candidates and "average_last_20" not in candidates
    # The same files under two names are one candidate.
    same = candidate_checkpoints({1: checkpoints[1], 2: checkpoints[2]}, {1: 1.0, 2: 2.0}, [2])
    assert list(same) == ["best", "average_last_2"]
    assert candidate_checkpoints(checkpoints, {}, average=[]) == {}


@pytest.fixture(scope="module")
def tokenizer():
    return SubwordTokenizer.train(SENTENCES * 20, vocabulary_size=30)


def save_checkpoints(model: keras.Model, folder: Path, count: int) -> list[Path]:
    """Saves `count` checkpoints of random weights; returns their paths."""
    rng = np.random.default_rng(0)
    paths = []
    for epoch in range(1, count + 1):
        model.set_weights([rng.normal(size=w.shape).astype(w.dtype) for w in model.get_weights()])
        paths.append(folder / f"epoch_{epoch:03d}.weights.h5")
        model.save_weights(paths[-1])
    return paths


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow translation")
def test_the_best_validation_candidate_is_kept(tokenizer, tmp_path: Path, monkeypatch, caplog):
    model = tiny_transformer(tokenizer.vocabulary_size)
    paths = save_checkpoints(model, tmp_path, 4)
    last = [w.copy() for w in model.get_weights()]

    # Validation "BLEU" is read from the weights the model holds when it translates: the
    # average of epochs 3 and 4 scores highest.
    def weight_score(hypotheses, references, language="de"):
        value = -abs(float(np.mean(model.get_weights()[0])) - target)
        return type("S", (), {"as_dict": lambda self: {"bleu": value, "chrf": 0.0}})()

    first = []
    for path in paths:
        model.load_weights(path)
        first.append(np.asarray(model.get_weights()[0], "float64"))
    target = float(np.mean((first[2] + first[3]) / 2))
    model.set_weights(last)
    monkeypatch.setattr(selection_module, "score", weight_score)
    candidates = {"best": [paths[1]], "average_last_2": paths[2:], "average_last_4": paths}
    with caplog.at_level("INFO", logger=selection_module.logger.name):
        chosen = select_weights(model, tokenizer, candidates, SENTENCES, SENTENCES, beam_size=2)
    # The scores are the caller's to report (tools/train.py's summary), not logged as well.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO] == []
    assert chosen.name == "average_last_2"
    assert chosen.checkpoints == [str(p) for p in paths[2:]]
    assert set(chosen.validation) == {"last", "best", "average_last_2", "average_last_4"}
    # The model holds the float64 mean of the two checkpoints.
    expected = []
    for path in paths[2:]:
        model.load_weights(path)
        expected.append([np.asarray(w, "float64") for w in model.get_weights()])
    average_checkpoint = [(a + b) / 2 for a, b in zip(*expected, strict=True)]
    select_weights(model, tokenizer, candidates, SENTENCES, SENTENCES, beam_size=2)
    for held, want in zip(model.get_weights(), average_checkpoint, strict=True):
        np.testing.assert_allclose(held, want, rtol=1e-6, atol=1e-7)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow translation")
def test_the_last_weights_stay_when_they_score_best(tokenizer, tmp_path: Path, monkeypatch):
    model = tiny_transformer(tokenizer.vocabulary_size)
    paths = save_checkpoints(model, tmp_path, 2)
    last = [w.copy() for w in model.get_weights()]
    last_first = float(np.mean(last[0]))

    def weight_score(hypotheses, references, language="de"):
        value = -abs(float(np.mean(model.get_weights()[0])) - last_first)
        return type("S", (), {"as_dict": lambda self: {"bleu": value, "chrf": 0.0}})()

    monkeypatch.setattr(selection_module, "score", weight_score)
    chosen = select_weights(model, tokenizer, {"average_last_2": paths}, SENTENCES, SENTENCES)
    assert chosen.name == "last" and chosen.checkpoints == []
    for held, want in zip(model.get_weights(), last, strict=True):
        np.testing.assert_array_equal(held, want)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow translation")
def test_a_checkpoint_of_the_last_weights_is_not_translated_again(
    tokenizer, tmp_path: Path, monkeypatch
):
    model = tiny_transformer(tokenizer.vocabulary_size)
    paths = save_checkpoints(model, tmp_path, 2)  # the model holds epoch 2's weights
    calls = []
    translate_all = selection_module.translate_all

    def counted(*args, **kwargs):
        calls.append(1)
        return translate_all(*args, **kwargs)

    monkeypatch.setattr(selection_module, "translate_all", counted)
    candidates = {"best": [paths[1]], "average_last_2": paths}
    chosen = select_weights(model, tokenizer, candidates, SENTENCES, SENTENCES)
    assert len(calls) == 2  # "last" and the average; "best" is epoch 2, the last weights
    assert chosen.validation["best"] == chosen.validation["last"]


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow translation")
def test_a_given_translator_is_used_without_tracing_again(tokenizer, tmp_path: Path):
    from keras_attention.serving.translator import Translator

    model = tiny_transformer(tokenizer.vocabulary_size)
    paths = save_checkpoints(model, tmp_path, 2)
    model.load_weights(paths[0])  # the last weights differ from both checkpoints
    own = select_weights(model, tokenizer, {"average_last_2": paths}, SENTENCES, SENTENCES,
                         beam_size=1)  # fmt: skip
    model.load_weights(paths[0])
    # A greedy translator's alpha is not a setting: it has no length penalty.
    translator = Translator(model, tokenizer, beam_size=1, alpha=1.5, max_source_length=128)
    translator.translate(SENTENCES[:1])
    traced = translator._translate.experimental_get_tracing_count()
    given = select_weights(model, tokenizer, {"average_last_2": paths}, SENTENCES, SENTENCES,
                           beam_size=1, translator=translator)  # fmt: skip
    assert translator._translate.experimental_get_tracing_count() == traced == 1
    assert given == own
    for other in (
        Translator(model, tokenizer, beam_size=2),
        Translator(model, tokenizer, beam_size=1, max_source_length=16),
        Translator(tiny_transformer(tokenizer.vocabulary_size), tokenizer, beam_size=1),
    ):
        with pytest.raises(ValueError, match="the translator searches"):
            select_weights(model, tokenizer, {}, SENTENCES, SENTENCES, beam_size=1,
                           translator=other)  # fmt: skip


def write_log(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_the_learning_curve_is_a_png(tmp_path: Path):
    rows = [
        {"epoch": e, "loss": 5 - e, "val_loss": 5.5 - e, "val_bleu": "nan" if e % 2 else 10 * e,
         "elapsed_s": 60.0 * (e + 1)}
        for e in range(4)
    ]  # fmt: skip
    write_log(tmp_path / "training_log.csv", rows)
    log = read_log(tmp_path / "training_log.csv")
    assert log["val_bleu"][0] == 0.0 and math.isnan(log["val_bleu"][1])
    path = plot_learning_curve(tmp_path / "training_log.csv", tmp_path / "curve.png")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".png"] == ["curve.png"]


def test_a_log_without_rows_is_named(tmp_path: Path):
    (tmp_path / "training_log.csv").write_text("epoch,loss\n")
    with pytest.raises(ValueError, match=r"training_log\.csv holds no epoch rows"):
        read_log(tmp_path / "training_log.csv")
