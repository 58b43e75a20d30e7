"""`ValidationBleu`: BLEU logged while training, the best weights kept, state kept on resume."""

import csv
import json
import math
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_attention.data.generated_corpus import generated_splits
from keras_attention.data.pipeline import encode_pairs, make_batches
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.evaluation import score, translate_all
from keras_attention.runs.validation_bleu import ValidationBleu, seeded_subset
from keras_attention.serving.translator import Translator
from keras_attention.training.recipe import compile_with_paper_recipe
from tests.scripts.tiny_transformer import tiny_transformer

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="translation runs on TensorFlow only"
)


@pytest.fixture(scope="module")
def setting():
    splits = generated_splits(num_train=200, num_val=20, num_test=5, seed=0)
    corpus = {
        name: ([s for s, _ in pairs], [t for _, t in pairs]) for name, pairs in splits.items()
    }
    tokenizer = SubwordTokenizer.train(corpus["train"][0] + corpus["train"][1], 120)
    # A few batches an epoch: the tests need epochs that change the weights, not learning.
    sources, targets = corpus["train"]
    encoded = encode_pairs(tokenizer, sources[:48], targets[:48], max_length=32)
    train = make_batches(encoded, max_tokens=512, max_length=32, shuffle=False)
    return tokenizer, train, corpus["val"]


def compiled_model(tokenizer: SubwordTokenizer):
    model = tiny_transformer(tokenizer.vocabulary_size)
    compile_with_paper_recipe(model, warmup_steps=10, jit_compile=False)
    return model


@pytest.fixture(scope="module")
def trained_model(setting):
    """One compiled model that the callback tests go on training (its train step is traced
    once); each test needs only epochs that change its weights."""
    return compiled_model(setting[0])


class WeightsAtEpochEnd(keras.callbacks.Callback):
    """Records the weights after every epoch (placed before the callback under test)."""

    def __init__(self):
        super().__init__()
        self.weights = []

    def on_epoch_end(self, epoch, logs=None):
        self.weights.append(self.model.get_weights())


def scripted(callback: ValidationBleu, bleus: list[float]) -> list[int]:
    """Replaces the translation with scores from a script; returns the list of epochs asked."""
    asked = []

    def evaluate():
        asked.append(len(asked))
        value = bleus[len(asked) - 1]
        return {"bleu": value, "chrf": value + 1, "bleu_lowercase": value, "bleu_tokenized": value}

    callback.evaluate = evaluate
    return asked


def read_rows(path: Path) -> list[dict]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


def test_scores_are_logged_and_the_best_weights_kept(setting, trained_model, tmp_path: Path):
    tokenizer, train, (sources, references) = setting
    model = trained_model
    callback = ValidationBleu(
        tokenizer, sources, references, every_epochs=1,
        best_path=tmp_path / "best.weights.h5", state_path=tmp_path / "state.json",
    )  # fmt: skip
    scripted(callback, [10.0, 30.0, 20.0, 25.0])
    recorder = WeightsAtEpochEnd()
    log = tmp_path / "log.csv"
    model.fit(train, epochs=4, verbose=0,
              callbacks=[recorder, callback, keras.callbacks.CSVLogger(str(log))])  # fmt: skip
    rows = read_rows(log)
    assert [float(row["val_bleu"]) for row in rows] == [10.0, 30.0, 20.0, 25.0]
    assert [float(row["val_chrf"]) for row in rows] == [11.0, 31.0, 21.0, 26.0]
    elapsed = [float(row["elapsed_s"]) for row in rows]
    assert elapsed == sorted(elapsed) and elapsed[0] > 0
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["best_epoch"] == 2 and state["best_bleu"] == 30.0
    assert sorted(state["scores"]) == ["1", "2", "3", "4"]
    # The best file holds epoch 2's weights, not the last epoch's.
    best = compiled_model(tokenizer)
    best.load_weights(tmp_path / "best.weights.h5")
    for kept, expected in zip(best.get_weights(), recorder.weights[1], strict=True):
        np.testing.assert_array_equal(kept, expected)
    assert not np.allclose(recorder.weights[1][0], recorder.weights[3][0])


def test_every_n_epochs_and_the_last(setting, trained_model, tmp_path: Path):
    tokenizer, train, (sources, references) = setting
    model = trained_model
    callback = ValidationBleu(tokenizer, sources, references, every_epochs=2)
    assert callback.translator is None  # made when training begins
    asked = scripted(callback, [1.0, 2.0, 3.0])
    log = tmp_path / "log.csv"
    model.fit(train, epochs=5, verbose=0, callbacks=[callback, keras.callbacks.CSVLogger(str(log))])
    values = [float(row["val_bleu"]) for row in read_rows(log)]
    assert len(asked) == 3  # epochs 2, 4 and the last, 5
    assert math.isnan(values[0]) and math.isnan(values[2])
    assert (values[1], values[3], values[4]) == (1.0, 2.0, 3.0)
    assert callback.translator.model is model and callback.translator.beam_size == 1


def test_a_greedy_run_ends_with_the_callbacks_translator():
    from types import SimpleNamespace

    from keras_attention.runs.config import TrainConfig
    from keras_attention.runs.train import _greedy_translator

    translator = SimpleNamespace(max_source_length=32)
    callback = SimpleNamespace(translator=translator)
    greedy = TrainConfig(beam_size=1, max_length=32)
    assert _greedy_translator(greedy, callback) is translator
    # Another search, another longest source, no callback or one not yet started: a new one.
    assert _greedy_translator(TrainConfig(beam_size=4, max_length=32), callback) is None
    assert _greedy_translator(TrainConfig(beam_size=1, max_length=64), callback) is None
    assert _greedy_translator(greedy, None) is None
    assert _greedy_translator(greedy, SimpleNamespace(translator=None)) is None


def test_a_resumed_run_keeps_its_best_and_its_clock(setting, trained_model, tmp_path: Path):
    tokenizer, train, (sources, references) = setting
    model = trained_model
    arguments = dict(best_path=tmp_path / "best.weights.h5", state_path=tmp_path / "state.json")
    first = ValidationBleu(tokenizer, sources, references, **arguments)
    scripted(first, [40.0])
    model.fit(train, epochs=1, verbose=0, callbacks=[first])
    kept = (tmp_path / "best.weights.h5").read_bytes()
    before = json.loads((tmp_path / "state.json").read_text())["elapsed_s"]

    second = ValidationBleu(tokenizer, sources, references, **arguments)
    scripted(second, [35.0])
    model.fit(train, initial_epoch=1, epochs=2, verbose=0, callbacks=[second])
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["best_epoch"] == 1 and state["best_bleu"] == 40.0
    assert (tmp_path / "best.weights.h5").read_bytes() == kept  # a worse epoch left it alone
    assert state["elapsed_s"] > before
    assert sorted(state["scores"]) == ["1", "2"]


def test_the_scores_are_those_of_the_cached_search(setting, trained_model):
    tokenizer, train, (sources, references) = setting
    model = trained_model
    model.fit(train, epochs=2, verbose=0)
    callback = ValidationBleu(tokenizer, sources, references, max_sentences=12, seed=3)
    callback.set_model(model)
    callback.on_train_begin()
    keep = seeded_subset(len(sources), 12, 3)
    translator = Translator(model, tokenizer, beam_size=1)
    hypotheses, _ = translate_all(
        lambda sentences: translator.translate(sentences), [sources[i] for i in keep]
    )
    expected = score(hypotheses, [references[i] for i in keep]).as_dict()
    assert callback.evaluate() == pytest.approx(expected)


def test_subsets_are_fixed_by_the_seed():
    first = seeded_subset(100, 10, seed=0)
    assert len(set(first)) == 10 and list(first) == sorted(first)
    np.testing.assert_array_equal(first, seeded_subset(100, 10, seed=0))
    assert not np.array_equal(first, seeded_subset(100, 10, seed=1))
    np.testing.assert_array_equal(seeded_subset(5, None, 0), np.arange(5))
    np.testing.assert_array_equal(seeded_subset(5, 50, 0), np.arange(5))
    with pytest.raises(ValueError, match="size must be >= 1"):
        seeded_subset(5, 0, 0)


def test_bad_arguments_are_named(setting):
    tokenizer, _, (sources, references) = setting
    with pytest.raises(ValueError, match="equal length; got 20 and 19"):
        ValidationBleu(tokenizer, sources, references[:-1])
    with pytest.raises(ValueError, match="every_epochs must be an integer >= 1; got 0"):
        ValidationBleu(tokenizer, sources, references, every_epochs=0)


def scores_of(bleu: float) -> dict:
    return {"bleu": bleu, "chrf": bleu, "bleu_lowercase": bleu, "bleu_tokenized": bleu}


@pytest.mark.parametrize(
    ("saved_best", "finished", "best_after"),
    [
        (2, 1, 1),  # the best epoch was scored after the backup: the run forgets it
        (1, 1, 1),  # killed after the best file of epoch 2, before the state said so
        (2, 0, None),  # killed before the first backup: nothing is kept
        (2, 2, 2),  # both epochs backed up: nothing changes
    ],
)
def test_a_resumed_run_forgets_the_epochs_after_its_backup(
    setting, tmp_path: Path, saved_best: int, finished: int, best_after: int | None
):
    tokenizer, _, (sources, references) = setting
    state_path, best_path = tmp_path / "state.json", tmp_path / "best.weights.h5"
    state = {
        "best_epoch": saved_best,
        "best_bleu": {1: 40.0, 2: 50.0}[saved_best],
        "scores": {"1": scores_of(40.0), "2": scores_of(50.0)},
        "elapsed_s": 12.0,
    }
    state_path.write_text(json.dumps(state))
    best_path.write_bytes(b"the weights of epoch 2")  # what the killed run saved last
    (tmp_path / f".{best_path.name}.x1y2z3.weights.h5").write_bytes(b"half-written")

    def checkpoint(epoch: int) -> Path:
        path = tmp_path / f"epoch_{epoch:03d}.weights.h5"
        path.write_bytes(f"the weights of epoch {epoch}".encode())
        return path

    callback = ValidationBleu(
        tokenizer, sources, references, best_path=best_path, state_path=state_path
    )
    callback.resume_from(finished, checkpoint)
    kept = json.loads(state_path.read_text())
    assert sorted(kept["scores"]) == [str(epoch) for epoch in range(1, finished + 1)]
    assert kept["best_epoch"] == best_after and kept["elapsed_s"] == 12.0
    if best_after is None:
        assert not best_path.exists() and kept["best_bleu"] is None
    else:
        assert best_path.read_bytes() == f"the weights of epoch {best_after}".encode()
    assert [path.name for path in tmp_path.glob(".*")] == []
