"""Fine-tuning a finished run (`runs/fine_tune.py`, `tools/train.py --init-from`): the child
keeps the parent's tokenizer byte for byte and its model settings, starts from its weights,
records where it started, with `--lora` changes only a low-rank update of the query and value
kernels (its adapter file reproduces the child from the parent), and what cannot work is
refused by name before anything is written."""

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from keras_attention.data.generated_corpus import generated_splits
from keras_attention.models import Transformer
from keras_attention.runs import fine_tune
from keras_attention_cli.commands import train
from tests.conftest import to_numpy
from tests.tolerances import assert_close


def write_split(folder: Path, name: str, pairs: list[tuple[str, str]]) -> list[str]:
    paths = [folder / f"{name}.en", folder / f"{name}.de"]
    for side, path in enumerate(paths):
        path.write_text("".join(pair[side] + "\n" for pair in pairs), encoding="utf-8")
    return [str(path) for path in paths]


@pytest.fixture(scope="module")
def new_files(tmp_path_factory) -> list[str]:
    """`--train ... --valid ... --test ...` of 200 new generated pairs, English -> German."""
    folder = tmp_path_factory.mktemp("new_text")
    splits = generated_splits(num_train=200, num_val=20, num_test=20, seed=9)
    arguments = []
    for option, name in (("--train", "train"), ("--valid", "val"), ("--test", "test")):
        arguments += [option, *write_split(folder, name, splits[name])]
    return arguments


@pytest.fixture(scope="module")
def lora_child(finished_tiny_run: Path, new_files: list[str], tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("lora_child") / "run"
    argv = ["--init-from", str(finished_tiny_run), *new_files, "--run-dir", str(folder)]
    assert train.main([*argv, "--lora", "2", "--epochs", "2", "--no-export"]) == 0
    return folder


def test_the_child_keeps_the_parents_tokenizer_settings_and_records_its_start(
    finished_tiny_run: Path, lora_child: Path
):
    for name in ("tokenizer.model",):
        assert (lora_child / name).read_bytes() == (finished_tiny_run / name).read_bytes()
    config = json.loads((lora_child / "config.json").read_text())
    parent = json.loads((finished_tiny_run / "config.json").read_text())
    assert config["init_from"] == str(finished_tiny_run) and config["lora_rank"] == 2
    assert config["recipe"] == fine_tune.RECIPE and config["patience"] == fine_tune.PATIENCE
    for name in ("preset", "vocabulary_size", "lowercase", "model_overrides"):
        assert config[name] == parent[name], name
    started = json.loads((lora_child / fine_tune.STARTED_FROM_FILE).read_text())
    assert started["run"] == str(finished_tiny_run.resolve())
    assert len(started["sha256"]) == 64


def test_lora_changes_only_a_low_rank_update_of_query_and_value(
    finished_tiny_run: Path, lora_child: Path
):
    parent = Transformer.from_preset(finished_tiny_run)
    child = Transformer.from_preset(lora_child)  # model.keras: the LoRA merged
    changed = []
    for before, after in zip(parent.weights, child.weights, strict=True):
        difference = to_numpy(after) - to_numpy(before)
        if np.any(difference != 0):
            changed.append(before.path.split("/", 1)[1])
            assert np.linalg.matrix_rank(difference, tol=1e-5) <= 2, before.path
    assert changed and all(path.rsplit("/", 2)[1] in ("query", "value") for path in changed)
    # The adapter file turns the parent into the child.
    adapted = Transformer.from_preset(finished_tiny_run)
    adapted.enable_lora(2)
    adapted.load_lora_weights(lora_child / fine_tune.ADAPTER_FILE)
    source, target_in = np.array([[5, 6, 7, 3]]), np.array([[2, 8, 9]])
    assert_close(adapted((source, target_in)), child((source, target_in)))


def test_the_fine_tuning_recipe_peaks_at_its_share_of_the_parents_peak():
    parent = {"learning_rate_scale": 2.5, "warmup_steps": 4000, "preset": "tiny"}
    settings = fine_tune.fine_tune_settings(parent)

    def peak(scale: float, warmup: int, d_model: int = 128) -> float:
        return scale / math.sqrt(d_model) / math.sqrt(warmup)

    ratio = peak(settings["learning_rate_scale"], settings["warmup_steps"]) / peak(2.5, 4000)
    assert ratio == pytest.approx(fine_tune.PEAK_SHARE, rel=1e-5)
    assert settings["preset"] == "tiny" and settings["average"] == []


@pytest.mark.parametrize(
    "given, message",
    [
        ({"vocabulary_size": 99}, "vocabulary_size=99: .* keeps its vocabulary_size=60"),
        ({"preset": "base"}, "preset='base'"),
        ({"lowercase": True}, "lowercase=True"),
        ({"model_overrides": {"d_model": 32}}, "d_model=32: .* keeps its model's shape"),
        ({"source_lang": "fr", "target_lang": "de"}, "source_lang='fr': .* translates en -> de"),
    ],
)
def test_what_cannot_work_is_refused_by_name(given: dict, message: str):
    parent = {
        "vocabulary_size": 60,
        "preset": "tiny",
        "lowercase": False,
        "model_overrides": {"d_model": 16},
        "source_lang": "en",
        "target_lang": "de",
    }
    with pytest.raises(ValueError, match=message):
        fine_tune.check_child(given, parent, "runs/parent", force_languages=False)
    if "source_lang" in given:  # forced, another pair is allowed
        fine_tune.check_child(given, parent, "runs/parent", force_languages=True)
    fine_tune.check_child({"model_overrides": {"dropout": 0.3}}, parent, "runs/parent", False)


def test_the_tool_refuses_an_unfinished_run_and_its_own_folder_in_one_line(
    tiny_run, finished_tiny_run: Path, new_files: list[str], tmp_path: Path, capsys
):
    unfinished = ["--init-from", str(tiny_run.path), *new_files, "--run-dir", str(tmp_path / "a")]
    with pytest.raises(SystemExit) as exit_info:
        train.main(unfinished)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("error: --init-from=") and "has not finished" in error
    copy = Path(shutil.copytree(finished_tiny_run, tmp_path / "copy"))
    with pytest.raises(SystemExit):
        train.main(["--init-from", str(copy), *new_files, "--run-dir", str(copy)])
    assert "needs a folder of its own" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()


def test_a_parent_whose_config_outgrows_its_weights_is_refused_before_building(
    finished_tiny_run: Path, new_files: list[str], tmp_path: Path, capsys
):
    copy = Path(shutil.copytree(finished_tiny_run, tmp_path / "copy"))
    config = json.loads((copy / "config.json").read_text())
    config["model_overrides"] = {**config["model_overrides"], "num_encoder_layers": 800}
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(SystemExit) as exit_info:
        train.main(["--init-from", str(copy), *new_files, "--run-dir", str(tmp_path / "child")])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"{copy / 'model.keras'} is too small for the model that " in error, error
    assert not (tmp_path / "child").exists()
