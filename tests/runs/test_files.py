"""A run folder's model from its epoch checkpoints, while the run still trains (no model.keras).

The run folder is made without training: config.json from `TrainConfig`, a tokenizer learned
on a few dozen generated sentences and two checkpoints of random weights. The tools run
in-process (`main([...])`).
"""

import argparse
import dataclasses
import importlib
import importlib.util
import json
import re
import shutil
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

import h5py
import keras
import numpy as np
import pytest

from keras_attention.data.generated_corpus import generate_pairs
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.models import Transformer
from keras_attention.runs.config import TrainConfig
from keras_attention.runs.files import (
    DEFAULT_ALPHA,
    DEFAULT_BEAM_SIZE,
    build_run_model,
    load_run_model,
    locate_run_model,
    resolve_checkpoint,
    run_beam_search,
)
from keras_attention.runs.train import load_run
from keras_attention.training.recipe import compile_with_paper_recipe

ROOT = Path(__file__).resolve().parents[2]
OVERRIDES = dict(
    num_encoder_layers=1, num_decoder_layers=1, d_model=16, num_heads=2, intermediate_dim=32
)


class TinyRun(NamedTuple):
    """A run folder and the weights saved in its checkpoints, by epoch."""

    path: Path
    weights: dict[int, list[np.ndarray]]


def load_tool(name: str) -> ModuleType:
    """`tools/<name>.py` as a module."""
    spec = importlib.util.spec_from_file_location(f"tool_{name}", ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_model(run_dir: Path) -> Transformer:
    """A model of the run's architecture, built as `train_translator` builds it."""
    config = json.loads((run_dir / "config.json").read_text())
    tokenizer = SubwordTokenizer.load(run_dir / "tokenizer.model")
    model = Transformer.from_preset(
        config["preset"], vocabulary_size=tokenizer.vocabulary_size, **config["model_overrides"]
    )
    model.build()
    return model


def make_tiny_run(path: Path) -> TinyRun:
    """Writes a run folder without training: config.json, tokenizer.model and two epoch
    checkpoints of random weights (no model.keras, as while a run trains)."""
    config = TrainConfig(
        output_dir=str(path), preset="tiny", model_overrides=OVERRIDES, vocabulary_size=60
    )
    (path / "config.json").write_text(json.dumps(dataclasses.asdict(config.resolved())))
    texts = [text for pair in generate_pairs(40, seed=0) for text in pair]
    SubwordTokenizer.train(texts, vocabulary_size=60).save(path / "tokenizer.model")
    model = run_model(path)
    # Compiled, with the optimizer's variables built: `ModelCheckpoint` saves those too.
    compile_with_paper_recipe(model, warmup_steps=10, jit_compile=False)
    model.optimizer.build(model.trainable_variables)
    (path / "checkpoints").mkdir()
    rng = np.random.default_rng(3)
    weights = {}
    for epoch in (1, 2):
        weights[epoch] = [rng.normal(0, 0.3, w.shape).astype(w.dtype) for w in model.get_weights()]
        model.set_weights(weights[epoch])
        model.save_weights(path / "checkpoints" / f"epoch_{epoch:03d}.weights.h5")
    with h5py.File(path / "checkpoints" / "epoch_001.weights.h5") as file:
        assert "optimizer" in file
    return TinyRun(path, weights)


@pytest.fixture(scope="module")
def run(tiny_run: TinyRun) -> TinyRun:
    """The session's tiny run (tests/conftest.py), which the tests only read."""
    return tiny_run


@pytest.fixture
def run_copy(run: TinyRun, tmp_path: Path) -> Path:
    """A copy of the run folder that a test may change."""
    return Path(shutil.copytree(run.path, tmp_path / "run"))


def assert_weights_equal(found: list, expected: list) -> None:
    assert len(found) == len(expected)
    for weight, value in zip(found, expected, strict=True):
        np.testing.assert_array_equal(weight, value)


def foreign_checkpoint(run_dir: Path, name: str = "epoch_003.weights.h5") -> Path:
    """Saves a checkpoint of a deeper encoder (which `load_weights` alone would accept)."""
    config = json.loads((run_dir / "config.json").read_text())
    tokenizer = SubwordTokenizer.load(run_dir / "tokenizer.model")
    overrides = {**config["model_overrides"], "num_encoder_layers": 2}
    model = Transformer.from_preset("tiny", vocabulary_size=tokenizer.vocabulary_size, **overrides)
    model.build()
    model.save_weights(run_dir / "checkpoints" / name)
    return run_dir / "checkpoints" / name


# Rebuilding and loading.


def test_build_run_model_has_the_run_architecture(run: TinyRun):
    model = build_run_model(run.path)
    assert model.built and model.d_model == 16
    assert [w.shape for w in model.get_weights()] == [w.shape for w in run.weights[1]]
    assert all(w.dtype == np.float32 for w in model.get_weights())


def test_build_run_model_of_a_mixed_precision_run_is_float32(run_copy: Path):
    config = json.loads((run_copy / "config.json").read_text())
    config["mixed_precision"] = "mixed_float16"
    (run_copy / "config.json").write_text(json.dumps(config))
    keras.config.set_dtype_policy("mixed_float16")  # as a caller might have left it
    model = build_run_model(run_copy)
    assert model.dtype_policy.name == "float32"
    assert keras.config.dtype_policy().name == "mixed_float16"  # restored


@pytest.mark.parametrize(
    "checkpoint", ["epoch_001.weights.h5", "{run}/checkpoints/epoch_001.weights.h5"]
)
def test_a_rebuilt_model_holds_the_checkpoint_weights(run: TinyRun, checkpoint: str):
    model, tokenizer = load_run_model(run.path, checkpoint=checkpoint.format(run=run.path))
    assert tokenizer.vocabulary_size == 60
    assert_weights_equal(model.get_weights(), run.weights[1])


def test_load_run_delegates_to_load_run_model(run: TinyRun):
    model, _ = load_run(run.path, checkpoint="epoch_002.weights.h5")
    assert_weights_equal(model.get_weights(), run.weights[2])
    model, _ = load_run(run.path, model_file=None)
    assert_weights_equal(model.get_weights(), run.weights[2])


def test_last_is_the_highest_epoch_and_the_default_without_model_keras(run: TinyRun):
    last = run.path / "checkpoints" / "epoch_002.weights.h5"
    assert resolve_checkpoint(run.path, "last") == last
    assert locate_run_model(run.path) == last
    model, _ = load_run_model(run.path, checkpoint="last")
    assert_weights_equal(model.get_weights(), run.weights[2])
    model, _ = load_run_model(run.path)
    assert_weights_equal(model.get_weights(), run.weights[2])


def test_model_keras_is_the_default_once_the_run_has_finished(run: TinyRun, run_copy: Path):
    model = build_run_model(run_copy)
    model.set_weights(run.weights[1])
    model.save(run_copy / "model.keras")
    assert locate_run_model(run_copy) == run_copy / "model.keras"
    loaded, _ = load_run_model(run_copy)
    assert_weights_equal(loaded.get_weights(), run.weights[1])


def test_best_is_checkpoints_best_weights(run: TinyRun, run_copy: Path):
    with pytest.raises(FileNotFoundError, match=r"best\.weights\.h5"):
        resolve_checkpoint(run_copy, "best")
    folder = run_copy / "checkpoints"
    shutil.copy(folder / "epoch_001.weights.h5", folder / "best.weights.h5")
    model, _ = load_run_model(run_copy, checkpoint="best")
    assert_weights_equal(model.get_weights(), run.weights[1])


# Bad run folders: each error names the file.


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is corrupt: not valid JSON"),
        ("[1, 2]", "is corrupt: it must hold a JSON object"),
        ('{"model_overrides": {}}', "lacks the field"),
        ('{"preset": "huge", "model_overrides": {}}', "preset must be one of"),
        ('{"preset": "tiny", "model_overrides": {"depth": 2}}', "does not describe a valid"),
    ],
)
def test_a_bad_config_is_named(run_copy: Path, content: str, message: str):
    (run_copy / "config.json").write_text(content)
    with pytest.raises(ValueError, match=message) as error:
        build_run_model(run_copy)
    assert str(run_copy / "config.json") in str(error.value)


@pytest.mark.parametrize("name", ["config.json", "tokenizer.model"])
def test_a_missing_run_file_is_named(run_copy: Path, name: str):
    (run_copy / name).unlink()
    with pytest.raises(FileNotFoundError) as error:
        load_run_model(run_copy, checkpoint="last")
    assert str(run_copy / name) in str(error.value)


def test_missing_checkpoints_and_models_are_named(run: TinyRun, tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="epoch_404"):
        load_run_model(run.path, checkpoint="epoch_404.weights.h5")
    with pytest.raises(FileNotFoundError) as error:
        load_run_model(run.path, model_file="averaged.keras")
    assert str(run.path / "averaged.keras") in str(error.value)
    empty = tmp_path / "empty"
    (empty / "checkpoints").mkdir(parents=True)
    with pytest.raises(FileNotFoundError) as error:
        load_run_model(empty)
    assert str(empty / "model.keras") in str(error.value)
    assert str(empty / "checkpoints") in str(error.value)
    with pytest.raises(ValueError, match="not both"):
        load_run_model(run.path, model_file="model.keras", checkpoint="last")
    with pytest.raises(IsADirectoryError, match=f"checkpoint {re.escape(str(tmp_path))} is a"):
        resolve_checkpoint(run.path, tmp_path)


def test_a_checkpoint_of_another_architecture_is_rejected(run_copy: Path):
    foreign = foreign_checkpoint(run_copy)
    with pytest.raises(ValueError, match="does not match the model's architecture") as error:
        load_run_model(run_copy, checkpoint="epoch_003.weights.h5")
    assert str(foreign) in str(error.value)


def test_a_truncated_checkpoint_is_named(run_copy: Path):
    path = run_copy / "checkpoints" / "epoch_002.weights.h5"
    path.write_bytes(path.read_bytes()[:100])  # as if still being written
    with pytest.raises(ValueError, match="is corrupt") as error:
        load_run_model(run_copy)
    assert str(path) in str(error.value)


def save_model_keras(run: TinyRun, run_dir: Path) -> Path:
    """Saves `run_dir/model.keras`, the run's model with the weights of epoch 1."""
    model = build_run_model(run_dir)
    model.set_weights(run.weights[1])
    model.save(run_dir / "model.keras")
    return run_dir / "model.keras"


@pytest.mark.parametrize("damage", ["truncated", "not a zip", "bad member"])
def test_a_corrupt_model_keras_is_named(run: TinyRun, run_copy: Path, damage: str):
    path = save_model_keras(run, run_copy)
    data = path.read_bytes()
    damaged = {
        "truncated": data[: len(data) // 2],  # Keras itself says "File not found"
        "not a zip": b"model",
        "bad member": data[:1000] + bytes(500) + data[1500:],  # a CRC error inside
    }[damage]
    path.write_bytes(damaged)
    with pytest.raises(ValueError, match="is corrupt") as error:
        load_run_model(run_copy)
    assert str(path) in str(error.value)


def test_a_corrupt_tokenizer_is_named(run_copy: Path):
    path = run_copy / "tokenizer.model"
    path.write_bytes(path.read_bytes()[:50])
    with pytest.raises(ValueError, match="is corrupt") as error:
        load_run_model(run_copy, checkpoint="last")
    assert str(path) in str(error.value)


# The beam search of a run: config.json's, else the defaults of older runs.


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"beam_size": 5, "alpha": 1.0}, (5, 1.0)),
        ({"beam_size": 2, "alpha": 0}, (2, 0.0)),
        ({}, (4, 0.6)),  # a run from before the fields existed
        ({"beam_size": None, "alpha": None}, (4, 0.6)),
    ],
)
def test_run_beam_search_reads_config_json(run_copy: Path, fields: dict, expected: tuple):
    config = json.loads((run_copy / "config.json").read_text())
    config = {name: value for name, value in config.items() if name not in ("beam_size", "alpha")}
    (run_copy / "config.json").write_text(json.dumps({**config, **fields}))
    assert run_beam_search(run_copy) == expected


def test_run_beam_search_without_config_json_is_the_default(tmp_path: Path):
    assert run_beam_search(tmp_path) == (DEFAULT_BEAM_SIZE, DEFAULT_ALPHA) == (4, 0.6)


@pytest.mark.parametrize(("fields", "name"), [({"beam_size": 0}, "beam_size"),
                                              ({"alpha": "high"}, "alpha")])  # fmt: skip
def test_run_beam_search_names_a_bad_value(run_copy: Path, fields: dict, name: str):
    config = json.loads((run_copy / "config.json").read_text())
    (run_copy / "config.json").write_text(json.dumps({**config, **fields}))
    with pytest.raises(ValueError, match=f"{name} in {re.escape(str(run_copy))}"):
        run_beam_search(run_copy)


# tools/average_checkpoints.py without model.keras.


def check_mean(found: list, *saved: list) -> None:
    for index, weight in enumerate(found):
        stack = np.stack([np.asarray(weights[index], np.float64) for weights in saved])
        np.testing.assert_allclose(weight, stack.mean(axis=0).astype(np.float32), rtol=1e-7)


def test_average_tool_weights_only_output(run: TinyRun, tmp_path: Path, capsys):
    output = tmp_path / "avg.weights.h5"
    load_tool("average_checkpoints").main(
        ["--run-dir", str(run.path), "--last", "2", "--output", str(output)]
    )
    assert "averaged 2 checkpoints (epoch_001.weights.h5 .. epoch_002.weights.h5)" in (
        capsys.readouterr().out
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["avg.weights.h5"]  # no staging left
    model, _ = load_run_model(run.path, checkpoint=output)
    check_mean(model.get_weights(), run.weights[1], run.weights[2])
    assert not (run.path / "averaged.keras").exists()


def test_average_tool_epochs_to_a_keras_file(run: TinyRun, run_copy: Path):
    output = run_copy / "averaged.keras"
    output.write_bytes(b"an older file, replaced")
    load_tool("average_checkpoints").main(["--run-dir", str(run_copy), "--epochs", "2", "1"])
    check_mean(keras.models.load_model(output).get_weights(), run.weights[1], run.weights[2])
    model, _ = load_run_model(run_copy)  # model.keras is still absent: the last checkpoint
    assert_weights_equal(model.get_weights(), run.weights[2])


def tool_error(capsys, tool: str, *args: str | Path) -> str:
    """Runs a tool that must fail with a user error; returns its stderr, one line."""
    with pytest.raises(SystemExit) as exit_info:
        load_tool(tool).main([str(arg) for arg in args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def test_average_tool_errors_name_the_file(run: TinyRun, run_copy: Path, tmp_path: Path, capsys):
    tool = "average_checkpoints"
    missing = tmp_path / "missing"
    err = tool_error(capsys, tool, "--run-dir", run.path, "--output", missing / "a.keras")
    assert f"--output {missing / 'a.keras'}: the folder {missing} does not exist" in err
    err = tool_error(capsys, tool, "--run-dir", run.path, "--output", tmp_path / "a.h5")
    assert ".keras or .weights.h5" in err
    err = tool_error(capsys, tool, "--run-dir", tmp_path / "no_run")
    assert str(tmp_path / "no_run" / "config.json") in err
    err = tool_error(capsys, tool, "--run-dir", run.path, "--epochs", "1", "7")
    assert str(run.path / "checkpoints" / "epoch_007.weights.h5") in err
    err = tool_error(capsys, tool, "--run-dir", run.path, "--last", "3")
    assert "holds 2" in err
    foreign = foreign_checkpoint(run_copy)
    err = tool_error(capsys, tool, "--run-dir", run_copy, "--epochs", "1", "3")
    assert f"checkpoint {foreign} does not match" in err
    (run_copy / "config.json").write_text("{not json")
    err = tool_error(capsys, tool, "--run-dir", run_copy, "--epochs", "1", "2")
    assert f"{run_copy / 'config.json'} is corrupt" in err
    assert not (run_copy / "averaged.keras").exists()


# tools/evaluate.py on a checkpoint.


def test_evaluate_tool_scores_an_epoch_checkpoint(run: TinyRun, capsys):
    args = ["--run-dir", str(run.path), "--checkpoint", "epoch_001.weights.h5", "--limit", "3"]
    load_tool("evaluate").main([*args, "--beam-size", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"model: {run.path / 'checkpoints' / 'epoch_001.weights.h5'}"
    assert lines[1] == "generated test split (seed 0): 3 sentences"
    assert lines[2].startswith("BLEU ")
    assert lines[-1].startswith("BLEU (lowercased, Moses-tokenized) ")  # no JSON: no --json


def test_evaluate_tool_defaults_to_the_last_checkpoint(run: TinyRun):
    evaluate = importlib.import_module("keras_attention_cli.commands.evaluate")
    args = argparse.Namespace(
        run_dir=str(run.path), saved_model=None, model_file=None, checkpoint=None,
        beam_size=1, alpha=0.6,
    )  # fmt: skip
    translate, path = evaluate.load_scored_model(args)
    assert path == run.path / "checkpoints" / "epoch_002.weights.h5"
    assert callable(translate)


def test_evaluate_tool_errors_name_the_file(run: TinyRun, run_copy: Path, capsys):
    foreign = foreign_checkpoint(run_copy)
    err = tool_error(capsys, "evaluate", "--run-dir", run_copy, "--checkpoint", foreign.name)
    assert f"checkpoint {foreign} does not match" in err
    err = tool_error(capsys, "evaluate", "--run-dir", run.path, "--checkpoint", "epoch_9.h5")
    assert str(run.path / "checkpoints" / "epoch_9.h5") in err
    err = tool_error(capsys, "evaluate", "--run-dir", run.path, "--checkpoint", "last",
                     "--model-file", "model.keras")  # fmt: skip
    assert "not allowed with argument" in err
    (run_copy / "config.json").write_text("{not json")
    err = tool_error(capsys, "evaluate", "--run-dir", run_copy, "--checkpoint", "last")
    assert f"{run_copy / 'config.json'} is corrupt" in err


# The beam search of tools/translate.py, tools/evaluate.py and tools/export.py: the run's
# unless given.


class TranslatorArguments:
    """Records the beam width and length penalty of every `Translator` built."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        import keras_attention.runs.translate_function
        import keras_attention.serving.translator

        self.calls = []
        real = keras_attention.serving.translator.Translator

        def record(model, tokenizer, beam_size=4, alpha=0.6, **kwargs):
            self.calls.append((beam_size, alpha))
            return real(model, tokenizer, beam_size, alpha, **kwargs)

        monkeypatch.setattr(keras_attention.runs.translate_function, "Translator", record)
        monkeypatch.setattr(keras_attention.serving.translator, "Translator", record)


@pytest.mark.parametrize(
    ("fields", "flags", "expected"),
    [
        ({"beam_size": 1, "alpha": 0.0}, [], (1, 0.0)),
        ({}, [], (4, 0.6)),  # a run from before the fields existed
        ({"beam_size": 1, "alpha": 0.0}, ["--beam-size", "2", "--alpha", "0.5"], (2, 0.5)),
    ],
)
def test_tools_decode_with_the_run_beam_search_unless_given(
    run_copy: Path, tmp_path: Path, monkeypatch, capsys, fields: dict, flags: list, expected
):
    config = json.loads((run_copy / "config.json").read_text())
    config = {name: value for name, value in config.items() if name not in ("beam_size", "alpha")}
    (run_copy / "config.json").write_text(json.dumps({**config, **fields}))
    recorded = TranslatorArguments(monkeypatch)
    # No line to translate: the settings are those of the `Translator` built before any input.
    (tmp_path / "input.txt").write_text("", encoding="utf-8")
    weights = "checkpoints/epoch_001.weights.h5"
    load_tool("translate").main(
        ["--run-dir", str(run_copy), "--model-file", weights, str(tmp_path / "input.txt"), *flags]
    )
    evaluate = importlib.import_module("keras_attention_cli.commands.evaluate")
    evaluate.load_scored_model(evaluate.parse_args(["--run-dir", str(run_copy), *flags]))
    monkeypatch.setattr(
        "keras_attention.serving.export.export_translator", lambda *a, **k: "exported"
    )
    load_tool("export").main(["--run-dir", str(run_copy), "--model-file", weights, *flags])
    assert recorded.calls == [expected] * 3
    assert capsys.readouterr().out.endswith("exported exported\n")
