"""Trained models load like keras-hub presets (issue 34): `Transformer.from_preset` and
`Translator.from_preset` take a size name, a run folder or a preset folder in keras-hub's
layout (`save_to_preset`), and the tools take any of them, or a SavedModel, with `--model`.

The run folder is made without training (`tiny_run` in tests/conftest.py: config.json,
a tokenizer and two checkpoints of random weights); a copy of it gets a `model.keras`, as a
finished run has, and is exported once (`finished_tiny_run`, `tiny_saved_model`). The JAX
and PyTorch checks run in a fresh interpreter each.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from keras_attention.models import Transformer, save_to_preset
from keras_attention.models.preset_sources import folder_kind
from keras_attention.runs.files import load_run_model, run_beam_search
from keras_attention.runs.preset_export import save_run_as_preset
from keras_attention.serving.export import load_exported
from keras_attention.serving.translator import Translator
from tests.runs.test_files import (
    TinyRun,
    assert_weights_equal,
    load_tool,
    tool_error,
)

ROOT = Path(__file__).resolve().parents[2]
SENTENCES = ["A man rides a bike.", "", "Two dogs play in the park."]
PRESET_FILES = [
    "assets",
    "assets/tokenizer",
    "assets/tokenizer/tokenizer.model",
    "config.json",
    "metadata.json",
    "model.weights.h5",
]


@pytest.fixture(scope="module")
def run(tiny_run: TinyRun) -> TinyRun:
    """The session's run still training (tests/conftest.py): its last checkpoint is epoch 2."""
    return tiny_run


@pytest.fixture(scope="module")
def finished_run(finished_tiny_run: Path) -> Path:
    """The session's finished copy of the run, whose `model.keras` holds epoch 1's weights."""
    return finished_tiny_run


@pytest.fixture(scope="module")
def preset(finished_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_run_as_preset(finished_run, tmp_path_factory.mktemp("presets") / "en-de")


@pytest.fixture(scope="module")
def saved_model(tiny_saved_model: Path) -> Path:
    """The finished run exported as TF Serving's SavedModel, with beam size 2."""
    return tiny_saved_model


def texts(outputs: dict) -> list[str]:
    return [text.decode("utf-8") for text in outputs["translations"].numpy()]


# Transformer.from_preset: size names.


def test_a_size_name_without_vocabulary_size_says_it_needs_one():
    with pytest.raises(ValueError, match=r"from_preset\('tiny'\).*needs vocabulary_size") as info:
        Transformer.from_preset("tiny")
    assert "Transformer.from_preset('runs/translator')" in str(info.value)


def test_a_size_name_with_vocabulary_size_makes_an_untrained_model():
    model = Transformer.from_preset("tiny", vocabulary_size=100, dropout=0.2)
    assert (model.vocabulary_size, model.d_model, model.num_encoder_layers) == (100, 128, 4)
    assert model.dropout == 0.2


# Transformer.from_preset: run folders.


def test_a_run_still_training_loads_its_last_checkpoint(run: TinyRun):
    model = Transformer.from_preset(run.path)
    assert isinstance(model, Transformer) and model.built
    assert_weights_equal(model.get_weights(), run.weights[2])
    assert model.dtype_policy.name == "float32"


def test_a_finished_run_loads_model_keras(run: TinyRun, finished_run: Path):
    model = Transformer.from_preset(str(finished_run))
    assert_weights_equal(model.get_weights(), run.weights[1])
    expected, _ = load_run_model(finished_run)
    assert_weights_equal(model.get_weights(), expected.get_weights())


def test_overrides_apply_to_a_trained_model_whose_weights_still_fit(run: TinyRun):
    model = Transformer.from_preset(run.path, dropout=0.0)
    assert model.dropout == 0.0
    assert_weights_equal(model.get_weights(), run.weights[2])
    with pytest.raises(ValueError, match="do not fit the trained model"):
        Transformer.from_preset(run.path, d_model=32, num_heads=2)


def test_a_wrong_vocabulary_size_for_a_trained_model_is_named(run: TinyRun):
    with pytest.raises(ValueError, match="has vocabulary_size=60; got vocabulary_size=61"):
        Transformer.from_preset(run.path, vocabulary_size=61)
    assert Transformer.from_preset(run.path, vocabulary_size=60).vocabulary_size == 60


# Preset folders in keras-hub's layout.


def test_save_run_as_preset_writes_keras_hubs_layout(preset: Path, finished_run: Path):
    assert sorted(str(p.relative_to(preset)) for p in preset.rglob("*")) == PRESET_FILES
    assert sorted(p.name for p in preset.parent.iterdir()) == ["en-de"]  # no staging left
    config = json.loads((preset / "config.json").read_text())
    assert config["registered_name"] == "keras_attention>Transformer"
    assert config["config"]["d_model"] == 16 and "build_config" not in config
    metadata = json.loads((preset / "metadata.json").read_text())
    beam_size, alpha = run_beam_search(finished_run)
    assert (metadata["beam_size"], metadata["alpha"]) == (beam_size, alpha)
    assert metadata["parameter_count"] == Transformer.from_preset(finished_run).count_params()
    assert {"keras_attention_version", "keras_version", "date_saved"} <= set(metadata)
    assert {"source_language", "target_language"} <= set(metadata)
    assert folder_kind(preset) == "preset" and folder_kind(finished_run) == "run"


def test_a_preset_round_trip_keeps_weights_and_translations(finished_run: Path, preset: Path):
    from_run, from_preset = Transformer.from_preset(finished_run), Transformer.from_preset(preset)
    assert type(from_preset) is Transformer
    assert from_preset.get_config() == from_run.get_config()
    assert_weights_equal(from_preset.get_weights(), from_run.get_weights())
    run_translator = Translator.from_preset(finished_run, beam_size=2)
    preset_translator = Translator.from_preset(preset, beam_size=2)
    run_outputs = run_translator.translate(SENTENCES)
    preset_outputs = preset_translator.translate(SENTENCES)
    assert texts(preset_outputs) == texts(run_outputs)
    np.testing.assert_array_equal(preset_outputs["scores"], run_outputs["scores"])


def test_save_to_preset_and_back_without_a_run(tmp_path: Path):
    model = Transformer.from_preset("tiny", vocabulary_size=60, num_encoder_layers=1)
    (tmp_path / "model_only").mkdir()  # an empty folder may be written to
    model.save_to_preset(tmp_path / "model_only")  # built on the way; no tokenizer
    loaded = Transformer.from_preset(tmp_path / "model_only")
    assert loaded.num_encoder_layers == 1
    assert_weights_equal(loaded.get_weights(), model.get_weights())
    with pytest.raises(FileNotFoundError, match=r"no tokenizer at .*saved without one"):
        Translator.from_preset(tmp_path / "model_only")


def test_a_preset_keeps_the_recaser_of_a_lowercasing_tokenizer(run: TinyRun, tmp_path: Path):
    from keras_attention.data.generated_corpus import generate_pairs
    from keras_attention.data.tokenizer import SubwordTokenizer

    sentences = [text for pair in generate_pairs(40, seed=0) for text in pair]
    tokenizer = SubwordTokenizer.train(
        [s.lower() for s in sentences], vocabulary_size=60, recase_texts=sentences
    )
    model = Transformer.from_preset(run.path)
    save_to_preset(model, tmp_path / "cased", tokenizer, beam_size=1, alpha=0.0)
    assert (tmp_path / "cased" / "assets" / "tokenizer" / "tokenizer.recaser.tsv").is_file()
    translator = Translator.from_preset(tmp_path / "cased")
    assert translator.tokenizer.lowercase and (translator.beam_size, translator.alpha) == (1, 0.0)


def test_save_to_preset_refuses_a_folder_that_is_not_empty(run: TinyRun, tmp_path: Path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    model = Transformer.from_preset(run.path)
    message = f"{tmp_path / 'taken'} exists and is not an empty folder"
    with pytest.raises(FileExistsError, match=re.escape(message)):
        save_to_preset(model, tmp_path / "taken")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["notes.txt"]


# Translator.from_preset.


def test_translator_from_a_run_folder_gives_strings(run: TinyRun):
    translator = Translator.from_preset(run.path)
    assert (translator.beam_size, translator.alpha) == run_beam_search(run.path)
    outputs = translator.translate(["A man rides a bike."])
    [translation] = outputs["translations"].numpy().tolist()
    assert isinstance(translation, bytes)
    found = Translator.from_preset(run.path, beam_size=1).translate_texts(SENTENCES)
    assert len(found) == 3 and all(isinstance(text, str) for text in found) and found[1] == ""


def test_translator_from_a_size_name_is_refused():
    with pytest.raises(ValueError, match="'tiny' is a size name"):
        Translator.from_preset("tiny")


# Paths that are neither a size name nor a model folder.


def make_not_a_model(kind: str, tmp_path: Path) -> tuple[Path, type[Exception], str]:
    """A path that holds no model, the error `from_preset` raises and a part of its message."""
    path = tmp_path / kind
    if kind == "missing":
        return path, ValueError, "neither a size nor an existing path"
    if kind == "file":
        path.write_text("hello")
        return path, ValueError, "is a file"
    path.mkdir()
    if kind == "empty":
        return path, FileNotFoundError, "it has no config.json"
    if kind == "foreign":
        (path / "config.json").write_text('{"hidden_size": 8}')
        return path, ValueError, "has neither field"
    if kind == "corrupt":
        (path / "config.json").write_text("{not json")
        return path, ValueError, "config.json is corrupt"
    (path / "saved_model.pb").write_bytes(b"")
    return path, ValueError, "is an exported SavedModel"


@pytest.mark.parametrize("kind", ["missing", "file", "empty", "foreign", "corrupt", "saved"])
def test_a_path_without_a_model_is_named(kind: str, tmp_path: Path):
    path, error, part = make_not_a_model(kind, tmp_path)
    with pytest.raises(error) as info:
        Transformer.from_preset(path)
    message = str(info.value)
    assert str(path) in message and part in message and "\n" not in message


def test_a_preset_folder_missing_its_weights_is_named(preset: Path, tmp_path: Path):
    copy = Path(shutil.copytree(preset, tmp_path / "copy"))
    (copy / "model.weights.h5").unlink()
    message = f"no model weights at {copy / 'model.weights.h5'}"
    with pytest.raises(FileNotFoundError, match=re.escape(message)):
        Transformer.from_preset(copy)


# Under JAX and PyTorch: the model loads; the strings-in translator says what it needs.

BACKEND_PROBE = textwrap.dedent("""
    import json, sys
    import numpy as np
    from keras_attention.models import Transformer

    run_dir, weights_file = sys.argv[1:]
    model = Transformer.from_preset(run_dir)
    np.savez(weights_file, *model.get_weights())
    loaded_tensorflow = "tensorflow" in sys.modules
    from keras_attention.serving.translator import Translator

    messages = []
    for make in (lambda: Translator.from_preset(run_dir), lambda: Translator(model, None)):
        try:
            make()
            messages.append(None)
        except RuntimeError as error:
            messages.append(str(error))
    print(json.dumps({"loaded_tensorflow": loaded_tensorflow, "messages": messages}))
""")


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_other_backends_load_the_model_and_refuse_the_string_translator(
    backend: str, run: TinyRun, tmp_path: Path
):
    weights_file = tmp_path / "weights.npz"
    done = subprocess.run(
        [sys.executable, "-c", BACKEND_PROBE, str(run.path), str(weights_file)],
        capture_output=True, text=True, timeout=300, cwd=ROOT, check=False,
        env={**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    with np.load(weights_file) as saved:
        assert_weights_equal([saved[f"arr_{i}"] for i in range(len(saved))], run.weights[2])
    assert report["loaded_tensorflow"] is False  # the model alone needs no TensorFlow
    for message in report["messages"]:
        assert message is not None and f"on {backend!r}" in message
        assert "TensorFlow backend" in message and "KERAS_BACKEND=tensorflow" in message
        assert "keras_attention.decoding.beam_search(model, source_ids" in message


# The tools: --model takes a run folder, a preset folder or a SavedModel.


def run_translate_tool(capsys, *args: str | Path) -> list[str]:
    load_tool("translate").main([str(arg) for arg in args])
    return capsys.readouterr().out[:-1].split("\n")


def test_translate_tool_takes_a_run_folder_a_preset_and_a_saved_model(
    finished_run: Path, preset: Path, saved_model: Path, tmp_path: Path, capsys
):
    (tmp_path / "input.txt").write_text("".join(s + "\n" for s in SENTENCES), encoding="utf-8")
    source = tmp_path / "input.txt"
    served = load_exported(saved_model)(sentences=tf.constant(SENTENCES))
    expected = texts(served)
    from_saved = run_translate_tool(capsys, "--model", saved_model, source)
    from_run = run_translate_tool(capsys, "--model", finished_run, "--beam-size", "2", source)
    from_preset = run_translate_tool(capsys, "--model", preset, "--beam-size", "2", source)
    legacy = run_translate_tool(capsys, "--run-dir", finished_run, "--beam-size", "2", source)
    assert from_saved == from_run == from_preset == legacy == expected
    scored = run_translate_tool(capsys, "--model", saved_model, "--scores", source)
    found = [float(line.split("\t")[0]) for line in scored]
    np.testing.assert_allclose(found, served["scores"].numpy(), atol=1e-4)


def test_translate_tool_names_a_model_path_that_is_none_of_them(
    preset: Path, saved_model: Path, tmp_path: Path, capsys
):
    err = tool_error(capsys, "translate", "--model", tmp_path / "nothing")
    assert err.startswith("error: --model: ") and str(tmp_path / "nothing") in err
    err = tool_error(capsys, "translate", "--model", tmp_path)
    assert "is neither a run folder" in err and str(tmp_path) in err
    err = tool_error(capsys, "translate", "--model", saved_model, "--beam-size", "3")
    assert "--beam-size: only with --run-dir" in err
    err = tool_error(capsys, "translate", "--model", preset, "--model-file", "x.keras")
    assert f"--model-file: only with a run folder; {preset}" in err


def test_evaluate_tool_scores_a_preset_folder(preset: Path, capsys):
    load_tool("evaluate").main(["--model", str(preset), "--limit", "3", "--beam-size", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"model: {preset}"
    assert lines[1] == "generated test split (seed 0): 3 sentences"
    # Readable lines only: the JSON line is behind --json.
    assert lines[-1].startswith("BLEU (lowercased, Moses-tokenized) ") and len(lines) == 6


def test_export_tool_writes_a_preset_folder_once(finished_run: Path, tmp_path: Path, capsys):
    target = tmp_path / "presets" / "tool"
    load_tool("export").main(["--run-dir", str(finished_run), "--preset-dir", str(target)])
    assert capsys.readouterr().out == f"saved preset {target}\n"
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*")) == PRESET_FILES
    expected = Transformer.from_preset(finished_run).get_weights()
    assert_weights_equal(Transformer.from_preset(target).get_weights(), expected)
    err = tool_error(capsys, "export", "--run-dir", finished_run, "--preset-dir", target)
    assert f"{target} exists and is not an empty folder" in err
    err = tool_error(
        capsys, "export", "--run-dir", finished_run, "--preset-dir", tmp_path / "x", "--overwrite"
    )
    assert "--overwrite: only for a SavedModel export" in err
