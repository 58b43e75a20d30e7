"""A user's files never give a silently wrong run: one file as both sides, a copy of the
source as the target, a corpus that holding out leaves empty (every reason counted), a
file corrected under a resumed run, and a run folder read from another working folder."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from keras_attention.data.datasets import files_spec
from keras_attention.data.generated_corpus import generated_splits
from keras_attention.runs.config import TrainConfig
from keras_attention.runs.corpus import load_run_corpus
from keras_attention.runs.corpus_fingerprint import (
    FINGERPRINT_FILE,
    check_fingerprint,
    corpus_fingerprint,
)
from keras_attention_cli.errors import global_jit_warning
from tests.run_helpers import main_error
from tests.runs.test_files import load_tool
from tests.runs.test_own_data import ROOT, TINY, write_lines


@pytest.fixture(scope="module")
def pairs() -> list[tuple[str, str]]:
    return generated_splits(num_train=300, num_val=0, num_test=0)["train"]


def test_one_file_as_source_and_target_is_refused(tmp_path: Path):
    write_lines(tmp_path / "c.en", ["one", "two", "three"])
    (tmp_path / "link.de").symlink_to(tmp_path / "c.en")  # another name of the same file
    for target in ("c.en", "link.de"):
        error = main_error("train", "--train", tmp_path / "c.en", tmp_path / target,
                           "--run-dir", tmp_path / "run", *TINY)  # fmt: skip
        assert re.match(r"error: train names one file as both source and target \(.*c\.en", error)
    assert not (tmp_path / "run").exists()


def test_a_copy_of_the_source_as_the_target_is_refused(tmp_path: Path, pairs):
    lines = [source for source, _ in pairs]
    write_lines(tmp_path / "c.en", lines)
    write_lines(tmp_path / "c.de", lines)
    error = main_error("train", "--train", tmp_path / "c.en", tmp_path / "c.de",
                       "--run-dir", tmp_path / "run", *TINY)  # fmt: skip
    assert "every training pair's target is its source in " in error and "c.de" in error
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("stream", [[], ["--stream", "--train-steps", "4"]])
def test_a_corpus_left_empty_says_why_for_every_pair(tmp_path: Path, stream: list[str]):
    write_lines(tmp_path / "c.en", ["A dog runs."] * 1000 + ["", "Cats."])
    write_lines(tmp_path / "c.de", ["Ein Hund rennt."] * 1000 + ["Leer.", ""])
    error = main_error("train", "--train", tmp_path / "c.en", tmp_path / "c.de",
                       "--run-dir", tmp_path / "run", *stream, *TINY)  # fmt: skip
    # 1,000 pairs: 50 held out for validation, 50 for test, the other 900 are copies of them.
    assert error.startswith(f"error: no training pair is left in {tmp_path / 'c.en'} and ")
    assert "900 pairs removed as copies of a validation or test source" in error
    assert "2 pairs with a blank side" in error


@pytest.mark.parametrize("stream", [False, True])
def test_blank_pairs_are_counted(tmp_path: Path, pairs, stream: bool):
    sources = [source for source, _ in pairs] + ["", "  ", "lonely"]
    targets = [target for _, target in pairs] + ["leer", "", "\t"]
    write_lines(tmp_path / "c.en.gz", sources)
    write_lines(tmp_path / "c.de.gz", targets)
    files = [[str(tmp_path / "c.en.gz"), str(tmp_path / "c.de.gz")]]
    run_corpus = load_run_corpus(TrainConfig(train=files, stream=stream))
    assert run_corpus.blank == 3
    # 300 pairs: 15 held out for validation, 15 for test, the copies of their sources removed.
    assert run_corpus.stats.pairs + 2 * 15 + run_corpus.removed == 300
    if not stream:
        assert len(run_corpus.corpus["train"][0]) == run_corpus.stats.pairs


def test_a_changed_file_is_found_by_content_not_by_path(tmp_path: Path, pairs):
    write_lines(tmp_path / "c.en", [s for s, _ in pairs])
    write_lines(tmp_path / "c.de", [t for _, t in pairs])
    spec = files_spec([[str(tmp_path / "c.en"), str(tmp_path / "c.de")]])
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / FINGERPRINT_FILE).write_text(json.dumps(corpus_fingerprint(spec)))
    # Moved elsewhere, same content: the same corpus.
    (tmp_path / "moved").mkdir()
    for name in ("c.en", "c.de"):
        os.replace(tmp_path / name, tmp_path / "moved" / name)
    moved = files_spec([[str(tmp_path / "moved" / "c.en"), str(tmp_path / "moved" / "c.de")]])
    check_fingerprint(tmp_path / "run", corpus_fingerprint(moved))
    # One line corrected, same size: refused, naming the file.
    text = (tmp_path / "moved" / "c.de").read_text()
    (tmp_path / "moved" / "c.de").write_text(text.replace("a", "e", 1))
    with pytest.raises(ValueError, match=r"the training target file .*moved/c\.de \(was .*/c\.de"):
        check_fingerprint(tmp_path / "run", corpus_fingerprint(moved))


def run_train_in(folder: Path, *args: str | Path) -> subprocess.CompletedProcess:
    """`tools/train.py` with `args`, started in `folder` (relative paths are its)."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run(
        [sys.executable, str(ROOT / "tools" / "train.py"), *map(str, args)],
        capture_output=True, text=True, timeout=600, env=env, check=False, cwd=folder,
    )  # fmt: skip


def test_a_run_folder_means_the_same_from_anywhere_and_refuses_a_changed_corpus(
    tmp_path: Path, pairs, capsys, monkeypatch
):
    work = tmp_path / "work"
    work.mkdir()
    write_lines(work / "c.en", [s for s, _ in pairs])
    write_lines(work / "c.de", [t for _, t in pairs])
    command = ["--train", "c.en", "c.de", "--epochs", "1", "--no-export", "--run-dir", "run"]
    result = run_train_in(work, *command, *TINY)
    assert result.returncode == 0, result.stderr[-3000:]
    run = work / "run"
    config = json.loads((run / "config.json").read_text())
    assert config["train"] == [[str(work / "c.en"), str(work / "c.de")]]
    test_sources = (run / "data" / "test.en").read_text().splitlines()
    assert len(test_sources) == 15
    # From another folder that holds a decoy c.en/c.de: the run's own test split is scored.
    decoy = tmp_path / "elsewhere"
    decoy.mkdir()
    write_lines(decoy / "c.en", ["decoy"] * 7)
    write_lines(decoy / "c.de", ["Köder"] * 7)
    monkeypatch.chdir(decoy)
    evaluate = ["--run-dir", str(run), "--split", "test", "--beam-size", "1", "--limit", "100"]
    assert load_tool("evaluate").main(evaluate) == 0
    assert "the run's own test split: 15 sentences" in capsys.readouterr().out
    # The training target corrected at the same path, the same command again: refused.
    before = {path: path.stat().st_mtime_ns for path in run.rglob("*")}
    targets = (work / "c.de").read_text().splitlines()
    write_lines(work / "c.de", [targets[0] + " korrigiert", *targets[1:]])
    again = run_train_in(work, *command, *TINY)
    assert again.returncode == 2
    notice = global_jit_warning(os.environ)  # the environment's, not the tool's error
    lines = [line for line in again.stderr.strip().splitlines() if line != notice]
    assert len(lines) == 1 and lines[0].startswith(
        f"error: the training target file {work / 'c.de'} changed since the run in "
    ), again.stderr[-3000:]
    assert {path: path.stat().st_mtime_ns for path in run.rglob("*")} == before
