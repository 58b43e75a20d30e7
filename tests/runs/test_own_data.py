"""`tools/train.py --train SOURCE TARGET` end to end on a user's own files: any suffixes and
pair, gzip and globs, held-out splits written into the run folder, the size rule with
`--epochs 1`, the languages recorded, and one-line errors that leave nothing behind.

A run trains in a fresh process, as a user starts it; the scoring and the errors, found
before any work, run the tools' `main` in this process."""

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from keras_attention.data.generated_corpus import generated_splits
from keras_attention.serving.export import export_metadata
from tests.run_helpers import main_error
from tests.runs.test_files import load_tool

ROOT = Path(__file__).resolve().parents[2]
TINY = [
    "--vocabulary-size", "120", "--max-tokens", "512", "--max-length", "32", "--no-jit",
    "--override", "num_encoder_layers=1", "--override", "num_decoder_layers=1",
    "--override", "d_model=16", "--override", "num_heads=2", "--override", "intermediate_dim=32",
]  # fmt: skip


def run_train(*args: str | Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run(
        [sys.executable, str(ROOT / "tools" / "train.py"), *map(str, args)],
        capture_output=True, text=True, timeout=600, env=env, check=False,
    )  # fmt: skip


def write_lines(path: Path, lines: list[str]) -> Path:
    data = "".join(line + "\n" for line in lines).encode()
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


@pytest.fixture(scope="module")
def pairs() -> list[tuple[str, str]]:
    return generated_splits(num_train=400, num_val=0, num_test=0)["train"]


def test_arbitrary_suffixes_are_the_languages_and_splits_are_held_out(
    tmp_path: Path, pairs, capsys
):
    source = write_lines(tmp_path / "a.xx", [s for s, _ in pairs])
    target = write_lines(tmp_path / "b.yy", [t for _, t in pairs])
    run = tmp_path / "run"
    result = run_train("--train", source, target, "--epochs", "1", "--run-dir", run, *TINY)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "corpus: 360 training pairs" in out and "xx -> yy" in out
    assert "validation split: 20 pairs, held out of the training pairs" in out
    assert "recipe: closed-vocabulary (chosen by the corpus's size)" in out
    assert "epochs: 1 (given)" in out and "vocabulary: 120 subwords (given)" in out
    config = json.loads((run / "config.json").read_text())
    assert (config["source_lang"], config["target_lang"]) == ("xx", "yy")
    assert config["recipe"] == "closed-vocabulary" and config["cooldown_epochs"] == 0
    tokenizer = json.loads((run / "tokenizer.json").read_text())
    assert (tokenizer["source_language"], tokenizer["target_language"]) == ("xx", "yy")
    assert export_metadata(run / "export" / "1")["target_language"] == "yy"
    valid = (run / "data" / "valid.xx").read_text().splitlines()
    test = (run / "data" / "test.xx").read_text().splitlines()
    assert len(valid) == len(test) == 20 and not set(valid) & set(test)
    assert len((run / "data" / "valid.yy").read_text().splitlines()) == 20
    # The held-out pairs are the corpus's, pair for pair.
    lookup = dict(pairs)
    valid_targets = (run / "data" / "valid.yy").read_text().splitlines()
    assert [lookup[s] for s in valid] == valid_targets
    # evaluate.py scores the run on its own held-out split.
    evaluate = ["--run-dir", str(run), "--split", "val", "--limit", "5", "--beam-size", "1"]
    assert load_tool("evaluate").main(evaluate) == 0
    assert "the run's own val split: 5 sentences" in capsys.readouterr().out
    # The same command again: the same split, and the finished run is not trained again.
    again = run_train("--train", source, target, "--epochs", "1", "--run-dir", run, *TINY)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (run / "data" / "valid.xx").read_text().splitlines() == valid


def test_gzip_shards_by_glob_with_given_splits_remove_their_sources(tmp_path: Path, pairs):
    for shard in range(2):
        part = pairs[shard * 150 : (shard + 1) * 150]
        write_lines(tmp_path / f"train.{shard}.de.gz", [t for _, t in part])
        write_lines(tmp_path / f"train.{shard}.en.gz", [s for s, _ in part])
    valid = pairs[300:330] + pairs[:5]  # 5 of them are training sources too
    write_lines(tmp_path / "dev.de", [t for _, t in valid])
    write_lines(tmp_path / "dev.en", [s for s, _ in valid])
    run = tmp_path / "run"
    result = run_train(
        "--train", tmp_path / "train.*.de.gz", tmp_path / "train.*.en.gz",
        "--valid", tmp_path / "dev.de", tmp_path / "dev.en", "--epochs", "1", "--no-export",
        "--run-dir", run, *TINY,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "de -> en" in result.stdout
    assert "validation split: 35 pairs, given" in result.stdout
    assert "left out of training: 5 pairs removed as copies of a validation" in result.stdout
    config = json.loads((run / "config.json").read_text())
    assert config["valid"] == [str(tmp_path / "dev.de"), str(tmp_path / "dev.en")]
    # The given validation split is kept in the run folder too, beside the held-out test.
    assert (run / "data" / "valid.de").read_text() == (tmp_path / "dev.de").read_text()
    assert (run / "data" / "test.de").is_file()


@pytest.mark.parametrize(
    "files, message",
    [
        (["missing.de", "b.en"], "error: train source: corpus file not found: .*missing.de"),
        (["a.de", "nothing.*.en"], r"error: train target: no file matches .*nothing\.\*\.en"),
        (["a.de", "short.en"], "error: parallel files differ in length: .*short.en ends after"),
    ],
)
def test_missing_or_misaligned_files_are_one_line_and_write_nothing(
    tmp_path: Path, files: list[str], message: str
):
    write_lines(tmp_path / "a.de", ["eins", "zwei", "drei"])
    write_lines(tmp_path / "b.en", ["one", "two", "three"])
    write_lines(tmp_path / "short.en", ["one", "two"])
    run = tmp_path / "run"
    error = main_error("train", "--train", *[tmp_path / name for name in files],
                       "--run-dir", run, *TINY)  # fmt: skip
    assert re.search(message, error), error
    assert not run.exists()


def test_too_small_a_corpus_asks_for_valid_and_test(tmp_path: Path):
    write_lines(tmp_path / "a.de", ["eins", "zwei"])
    write_lines(tmp_path / "b.en", ["one", "two"])
    error = main_error("train", "--train", tmp_path / "a.de", tmp_path / "b.en", *TINY,
                       "--run-dir", tmp_path / "run")  # fmt: skip
    assert error.endswith("give --valid and --test files")


def test_a_streamed_corpus_holds_out_its_splits_in_one_pass(tmp_path: Path, pairs):
    source = write_lines(tmp_path / "train.en.gz", [s for s, _ in pairs])
    target = write_lines(tmp_path / "train.de.gz", [t for _, t in pairs])
    run = tmp_path / "run"
    result = run_train(
        "--train", source, target, "--stream", "--train-steps", "4", "--no-export",
        "--run-dir", run, *TINY,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "corpus: 360 training pairs" in result.stdout and "streamed" in result.stdout
    assert "recipe: large (chosen by the corpus's size)" in result.stdout
    config = json.loads((run / "config.json").read_text())
    assert config["stream"] is True and config["train_steps"] == 4
    held_out = (run / "data" / "valid.en").read_text().splitlines()
    assert len(held_out) == 20 and set(held_out) <= {s for s, _ in pairs}
