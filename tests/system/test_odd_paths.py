"""Any path a filesystem allows works: a run trained, exported, reloaded, translated, scored,
averaged and exported again in a folder named with spaces, quotes, non-ASCII and the glob
characters `[ ] * ?`, from corpus files found by a glob inside such a folder.

TensorFlow reads the path of a checkpoint as a glob pattern (`core.literal_paths`): a folder
named `run [1]` made the run's reload of its own export fail after the whole run had trained.
The run is trained once for the module, in a fresh process, on a small corpus (its report
translates the whole test split); the other tools run in this process.
"""

import contextlib
import glob
import importlib
import io
import subprocess
from pathlib import Path

import pytest
import tensorflow as tf

from keras_attention.core.literal_paths import is_literal, literal_path
from keras_attention.data.corpus_files import expand
from keras_attention.serving.export import load_exported
from tests.tools.test_train import train_command

ODD = "run [1] *?'\" é"
CORPUS = "corpus [2] *?'\" é"
SENTENCES = ["A man rides a bike.", "", "The woman eats an apple."]


def run_main(tool: str, *args: str | Path) -> str:
    """Runs the `main` of `tools/<tool>.py` in this process; it must succeed. Returns what
    it printed."""
    main = importlib.import_module(f"tools.{tool}").main
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        main([str(arg) for arg in args])
    return printed.getvalue()


@pytest.fixture(scope="module")
def odd_run(tmp_path_factory) -> Path:
    """A tiny run of one epoch, exported, in a folder named `ODD`, trained on shards in a
    folder named `CORPUS` named by a glob."""
    base = tmp_path_factory.mktemp("odd")
    corpus = base / CORPUS
    run_main(
        "make_corpus_shards", "--pairs", "160", "--shards", "2", "--plain", "--held-out", "8",
        "--output", corpus,
    )  # fmt: skip
    run = base / ODD
    command = train_command(
        run, 1, "--train", f"{corpus}/train.*.en", f"{corpus}/train.*.de",
        "--valid", corpus / "val.en", corpus / "val.de", "--test", corpus / "test.en",
        corpus / "test.de", "--export",
    )  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (run / "export" / "1" / "saved_model.pb").is_file()
    (run / "input 'é'.txt").write_text("".join(line + "\n" for line in SENTENCES))
    return run


def test_tensorflow_reads_a_checkpoint_in_a_pattern_folder_through_a_literal_path(tmp_path):
    folder = tmp_path / "weights [1] *?\\ é"
    folder.mkdir()
    variable = tf.Variable([1.0, 2.0])
    prefix = tf.train.Checkpoint(v=variable).write(str(folder / "variables"))
    with pytest.raises(tf.errors.NotFoundError):  # what TensorFlow does with the path itself
        tf.train.load_checkpoint(prefix)
    with literal_path(prefix) as readable:
        assert is_literal(readable)
        values = tf.train.load_checkpoint(readable).get_tensor("v/.ATTRIBUTES/VARIABLE_VALUE")
    assert values.tolist() == [1.0, 2.0]
    assert not Path(readable).parent.exists()  # the symlink's folder is gone
    with literal_path(tmp_path / "plain") as readable:
        assert readable == str(tmp_path / "plain")


def test_a_glob_inside_a_pattern_folder_and_a_file_named_like_a_glob(tmp_path):
    folder = tmp_path / "my [corpus]"
    folder.mkdir()
    for name in ("train.1.en", "train.2.en", "[a]*.en"):
        (folder / name).write_text("x\n")
    assert glob.glob(f"{folder}/train.*.en") == []  # the folder, read as a pattern
    expected = [str(folder / "train.1.en"), str(folder / "train.2.en")]
    assert expand(f"{folder}/train.*.en", "--train source") == expected
    assert expand(str(folder / "[a]*.en"), "--train source") == [str(folder / "[a]*.en")]


def test_a_run_in_an_odd_folder_trains_exports_and_reloads(odd_run: Path):
    assert (odd_run / "bleu.json").is_file()
    translations = load_exported(odd_run / "export" / "1")(sentences=tf.constant(SENTENCES))
    assert translations["translations"].shape == (len(SENTENCES),)


@pytest.mark.parametrize("model", ["--run-dir", "--model"])
def test_translate_reads_an_odd_run_and_its_export(odd_run: Path, model):
    path = odd_run if model == "--run-dir" else odd_run / "export" / "1"
    printed = run_main("translate", model, path, "--scores", odd_run / "input 'é'.txt")
    assert len(printed.split("\n")) == len(SENTENCES) + 1  # one line each, and the end


def test_evaluate_scores_an_odd_run(odd_run: Path):
    hypotheses = odd_run / "hypotheses [1] é.txt"
    printed = run_main(
        "evaluate", "--run-dir", odd_run, "--limit", "4", "--output", hypotheses, "--json"
    )
    assert "test split: 4 sentence" in printed
    assert '"bleu"' in printed.splitlines()[-1]  # the scores as JSON, asked for
    assert len(hypotheses.read_text(encoding="utf-8").split("\n")) == 4 + 1


def test_average_and_export_an_odd_run(odd_run: Path):
    output = odd_run / "averaged [1].keras"
    printed = run_main(
        "average_checkpoints", "--run-dir", odd_run, "--last", "1", "--output", output
    )
    assert output.is_file() and str(output) in printed
    export_dir = odd_run / "export *?"
    printed = run_main(
        "export", "--run-dir", odd_run, "--model-file", output.name, "--output", export_dir
    )
    assert str(export_dir / "1") in printed
    translations = load_exported(export_dir / "1")(sentences=tf.constant(SENTENCES))
    assert translations["translations"].shape == (len(SENTENCES),)
