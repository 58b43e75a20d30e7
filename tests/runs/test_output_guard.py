"""`runs.output_guard`: no tool writes over its own inputs or a run's files, each refusal one
line naming the option and the file, and the tools' default outputs still allowed."""

import json
import os
import sys
from pathlib import Path

import pytest

from keras_attention.runs.config import TrainConfig
from keras_attention.runs.output_guard import (
    OutputGuardError,
    check_output_file,
    check_output_folder,
    check_run_output,
    check_standard_output,
)
from tests.run_helpers import main_error


def fake_run(folder: Path) -> Path:
    """A run folder as the guard recognises one: a `config.json` with a run's settings, its
    checkpoints and scores (no real weights: nothing is loaded)."""
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"preset": "tiny"}))
    (folder / "tokenizer.model").write_bytes(b"tokenizer")
    (folder / "checkpoints" / "epoch_001.weights.h5").write_bytes(b"weights 1")
    (folder / "checkpoints" / "epoch_002.weights.h5").write_bytes(b"weights 2")
    (folder / "bleu.json").write_text("{}")
    return folder


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return fake_run(tmp_path / "run")


def refused(check, *args, **kwargs) -> str:
    with pytest.raises(OutputGuardError) as error:
        check(*args, **kwargs)
    message = str(error.value)
    assert "\n" not in message
    return message


def test_an_output_that_is_an_input_is_refused_however_it_is_named(tmp_path: Path):
    source = tmp_path / "in.txt"
    source.write_text("a\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.txt").symlink_to(source)
    os.link(source, tmp_path / "hard.txt")
    for output in (source, tmp_path / "sub" / ".." / "in.txt", tmp_path / "link.txt",
                   tmp_path / "hard.txt"):  # fmt: skip
        message = refused(check_output_file, output, "--out", [source])
        assert message.startswith(f"--out {output}: ") and str(source) in message
    check_output_file(tmp_path / "out.txt", "--out", [source])  # another file: fine


@pytest.mark.parametrize(
    "name",
    ["checkpoints/epoch_001.weights.h5", "checkpoints/new.weights.h5", "backup/x.h5",
     "config.json", "model.keras", "tokenizer.model", "bleu.json", "test_metrics.json",
     "training_log.csv", "logs/train/x", "data/test.en", "export/1/x", ".lock"],
)  # fmt: skip
def test_a_file_of_a_run_is_refused_in_this_and_in_another_run(tmp_path: Path, run, name):
    other = fake_run(tmp_path / "other")
    for folder, inputs in ((run, [run]), (other, [run])):
        message = refused(check_output_file, folder / name, "--output", inputs)
        assert message.startswith(f"--output {folder / name}: ") and str(folder) in message
        assert name.split("/")[0] in message


def test_default_outputs_beside_a_run_are_allowed(run: Path):
    check_output_file(run / "averaged.keras", "--output", [run])
    check_output_file(run / "hypotheses.txt", "--hypotheses", [run, run / "model.keras"])
    check_output_folder(run / "export", "--export-dir", [run], allowed=[run / "export"])
    check_output_folder(run / "ct2", "--output-dir", [run, run / "model.keras"])
    check_output_folder(run / "preset", "--preset-dir", [run])


def test_allowed_is_the_tools_own_default_only(tmp_path: Path, run):
    other = fake_run(tmp_path / "other")
    message = refused(
        check_output_folder, other / "export", "--export-dir", [run], allowed=[run / "export"]
    )
    assert str(other) in message and "export" in message


def test_a_folder_that_is_not_a_run_is_not_guarded(tmp_path: Path):
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "config.json").write_text(json.dumps({"name": "a preset, not a run"}))
    check_output_file(tmp_path / "checkpoints" / "x.weights.h5", "--output")
    check_output_folder(tmp_path, "--output-dir")


def test_an_output_folder_holding_an_input_or_inside_a_runs_files_is_refused(tmp_path, run):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "train.en").write_text("a\n")
    for folder in (corpus, tmp_path):
        message = refused(check_output_folder, folder, "--output-dir", [corpus / "train.en"])
        assert "holds the tool's input" in message and str(corpus / "train.en") in message
    message = refused(check_output_folder, run / "checkpoints" / "sub", "--output-dir")
    assert "checkpoints" in message and str(run) in message
    assert "is a run folder" in refused(check_output_folder, run, "--output-dir")
    check_output_folder(run, "--output-dir", may_be_run=True)


def test_a_training_runs_output_folder_against_its_corpus(tmp_path: Path, run):
    corpus = tmp_path / "my [corpus]"
    corpus.mkdir()
    for name in ("train.1.en", "train.1.de", "val.en", "val.de"):
        (corpus / name).write_text("a\n")
    train = [[str(corpus / "train.*.en"), str(corpus / "train.*.de")]]
    config = TrainConfig(output_dir=str(corpus), train=train)
    message = refused(check_run_output, config)
    assert message.startswith(f"--run-dir {corpus}: ") and "train.1." in message
    config = TrainConfig(output_dir=str(run / "export" / "run"), train=train)
    assert "export" in refused(check_run_output, config)
    check_run_output(TrainConfig(output_dir=str(run), train=train))  # resumes its own run
    check_run_output(TrainConfig(output_dir=str(tmp_path / "new"), train=train))


def test_standard_output_redirected_into_an_input(tmp_path: Path, monkeypatch):
    source, other = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("")
    with source.open("a") as redirected:
        monkeypatch.setattr(sys, "stdout", redirected)
        assert str(source) in refused(check_standard_output, [other, source])
    with other.open("w") as redirected:
        monkeypatch.setattr(sys, "stdout", redirected)
        check_standard_output([source])


def test_the_tools_refuse_a_runs_files_in_one_line(tmp_path: Path, run):
    other = fake_run(tmp_path / "other")
    checkpoint = run / "checkpoints" / "epoch_001.weights.h5"
    line = main_error(
        "average_checkpoints", "--run-dir", run, "--epochs", "1", "2", "--output", checkpoint
    )
    assert f"--output {checkpoint}" in line
    assert checkpoint.read_bytes() == b"weights 1"
    line = main_error("evaluate", "--run-dir", run, "--output", other / "bleu.json")
    assert f"--output {other / 'bleu.json'}" in line
    line = main_error("export", "--run-dir", run, "--output", other / "export")
    assert f"--output {other / 'export'}" in line
    line = main_error("export", "--run-dir", run, "--preset-dir", run / "checkpoints" / "preset")
    assert "--preset-dir" in line and "checkpoints" in line
    line = main_error("convert_ctranslate2", "--run-dir", run, "--output", run)
    assert f"--output {run}: is the tool's input" in line
    line = main_error(
        "make_corpus_shards", "--pairs", "4", "--shards", "1", "--output", run / "data"
    )
    assert f"--output {run / 'data'}" in line
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.en").write_text("x\n")
    (corpus / "a.de").write_text("y\n")
    line = main_error("train", "--train", corpus / "a.en", corpus / "a.de", "--run-dir", tmp_path)
    assert f"--run-dir {tmp_path}: holds the tool's input" in line
    assert not (tmp_path / "config.json").exists()
