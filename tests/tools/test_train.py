"""`tools/train.py` end to end: the files of a run, resuming after SIGKILL, a run folder that
belongs to one configuration, and user errors as one line that leave nothing behind."""

import csv
import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import keras
import pytest
import tensorflow as tf

import keras_attention  # noqa: F401 (registers the classes that load_model reads)
from keras_attention.core.atomic_files import FAULT_VARIABLE
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.runs.config import TrainConfig
from keras_attention.serving.export import load_exported
from tests.run_helpers import NATIVE_LOG_LINE, logged_epochs, main_error

ROOT = Path(__file__).resolve().parents[2]
# One beam for the end of a run (the test scores, the export), where the search is not what
# is tested (beam search and its export: tests/serving/test_export.py).
ONE_BEAM = ("--beam-size", "1")
TINY = [
    "--train-pairs", "300", "--vocabulary-size", "120", "--max-tokens", "512",
    "--max-length", "32", "--warmup-steps", "20", "--no-jit",
    "--override", "num_encoder_layers=1", "--override", "num_decoder_layers=1",
    "--override", "d_model=16", "--override", "num_heads=2",
    "--override", "intermediate_dim=32",
]  # fmt: skip


def train_command(output_dir: Path, epochs: int, *extra: str) -> list[str]:
    return [
        sys.executable, str(ROOT / "tools" / "train.py"), "--run-dir", str(output_dir),
        "--epochs", str(epochs), *TINY, *extra,
    ]  # fmt: skip


def test_help_lists_the_options(capsys):
    from tools.train import parse_args

    with pytest.raises(SystemExit) as exit_info:
        parse_args(["--help"])
    assert exit_info.value.code == 0
    usage = capsys.readouterr().out
    for option in ("--preset", "--dataset", "--data-dir", "--epochs", "--max-tokens", "--devices",
                   "--run-dir", "--jit", "--mixed-precision", "--train-steps"):  # fmt: skip
        assert option in usage


def run_train(*args: str | Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run(
        [sys.executable, str(ROOT / "tools" / "train.py"), *map(str, args)],
        capture_output=True, text=True, timeout=timeout, env=env, check=False,
    )  # fmt: skip


def another_runs_files(output_dir: Path) -> None:
    """The files of a run of 5 epochs with other settings, in `output_dir`."""
    config = TrainConfig(output_dir=str(output_dir), epochs=5, vocabulary_size=150).resolved()
    (output_dir / "checkpoints").mkdir(parents=True)
    (output_dir / "config.json").write_text(json.dumps(dataclasses.asdict(config)))
    (output_dir / "tokenizer.model").write_bytes(b"another run's tokenizer")
    (output_dir / "checkpoints" / "epoch_005.weights.h5").write_bytes(b"another run's weights")
    (output_dir / "training_log.csv").write_text("epoch,loss\n0,9.0\n")
    (output_dir / "notes.txt").write_text("not a file of the run")


def test_a_run_writes_every_file_over_another_run_with_overwrite(tmp_path: Path):
    another_runs_files(tmp_path)
    # As a user runs it: no TF_CPP_MIN_LOG_LEVEL, so the tool alone keeps TensorFlow quiet.
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run(
        train_command(tmp_path, 2, "--overwrite", "--cooldown-epochs", "1"),
        capture_output=True, text=True, timeout=600, check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    native = [line for line in done.stderr.splitlines() if NATIVE_LOG_LINE.fullmatch(line)]
    assert native == [], native  # e.g. "E0000 ... failed call to cuInit", logged at the 1st op
    for name in ("config.json", "tokenizer.model", "training_log.csv", "model.keras",
                 "test_metrics.json", "checkpoints/epoch_001.weights.h5",
                 "checkpoints/epoch_002.weights.h5", "checkpoints/best.weights.h5",
                 "validation_bleu.json", "learning_curve.png", "bleu.json"):  # fmt: skip
        assert (tmp_path / name).exists(), name
    # The old run's files are gone, the others left alone.
    assert not (tmp_path / "checkpoints" / "epoch_005.weights.h5").exists()
    assert (tmp_path / "tokenizer.model").read_bytes() != b"another run's tokenizer"
    assert (tmp_path / "notes.txt").exists()
    with (tmp_path / "training_log.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert all(0.0 <= float(row["val_bleu"]) <= 100.0 for row in rows)  # every epoch scored
    assert float(rows[1]["elapsed_s"]) > float(rows[0]["elapsed_s"]) > 0
    bleu = json.loads((tmp_path / "bleu.json").read_text())
    assert bleu["model"] in bleu["validation"]
    assert {"last", "best"} <= set(bleu["validation"])
    assert set(bleu["test"]) == {"bleu", "chrf", "bleu_lowercase", "bleu_tokenized"}
    assert bleu["exported"].endswith("export/1")
    assert "final weights, chosen on the validation split:" in done.stdout
    # The validation scores are printed once, in the summary (not logged as well).
    printed = (done.stdout + done.stderr).splitlines()
    assert sum("validation (last weights):" in line for line in printed) == 1, printed[-30:]
    # The header says where each value came from: the generated corpus has its own splits.
    assert "validation split: 500 pairs, the generated corpus's own split" in done.stdout
    assert "cool-down: 1 epoch (given)" in done.stdout
    assert any((tmp_path / "logs").rglob("events.out.tfevents.*"))
    assert not (tmp_path / "backup").exists()
    assert json.loads((tmp_path / "config.json").read_text())["epochs"] == 2
    assert logged_epochs(tmp_path) == [0, 1]
    metrics = json.loads((tmp_path / "test_metrics.json").read_text())
    assert 0.0 <= metrics["accuracy"] <= 1.0
    model = keras.models.load_model(tmp_path / "model.keras")
    assert model.d_model == 16
    # The schedule knows the run's length: it cooled down over the second of 2 epochs.
    schedule = model.optimizer._learning_rate
    steps = int(model.optimizer.iterations)
    assert (schedule.total_steps, 2 * schedule.cooldown_steps) == (steps, steps)
    assert float(schedule(steps)) == 0.0 < float(schedule(steps - 1))
    model_bytes = (tmp_path / "model.keras").read_bytes()
    exported = (tmp_path / "export" / "1" / "saved_model.pb").stat().st_mtime_ns
    assert f"BLEU {bleu['test']['bleu']:.2f}" in done.stdout

    # The same command again: the run is finished, nothing is trained or logged again.
    again = subprocess.run(
        train_command(tmp_path, 2, "--cooldown-epochs", "1"),
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Epoch 1/" not in again.stdout + again.stderr
    assert logged_epochs(tmp_path) == [0, 1]
    assert (tmp_path / "model.keras").read_bytes() == model_bytes
    assert sorted(path.name for path in (tmp_path / "export").iterdir()) == ["1"]
    # Not exported nor scored again: the SavedModel translates examples, the scores are kept.
    assert (tmp_path / "export" / "1" / "saved_model.pb").stat().st_mtime_ns == exported
    assert f"BLEU {bleu['test']['bleu']:.2f}" in again.stdout
    assert "translations by the reloaded SavedModel:" in again.stdout
    assert [path.name for path in tmp_path.rglob(".*")] == []


def user_error(*args: str | Path) -> str:
    """Runs `tools/train.py`'s `main` in this process, which must fail with one line (see
    `main_error`). (A test of its own runs the tool as a program: no traceback and none of
    TensorFlow's start-up lines.)"""
    return main_error("train", *args)


def program_error(*args: str | Path) -> str:
    """Runs tools/train.py, which must fail with one line, `error: ...`; returns it."""
    done = run_train(*args)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, done.stderr[-3000:]
    # Nothing else but the run's own log lines: none of TensorFlow's start-up lines.
    own = ("error: ", "INFO ", "WARNING keras_attention.")
    assert all(line.startswith(own) for line in done.stderr.splitlines()), done.stderr[-3000:]
    assert done.stdout == ""
    return lines[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--epochs", "0"], "error: argument --epochs: must be >= 1; got 0"),  # the parser's
        (["--accumulate-steps", "500"], "error: --accumulate-steps=500 is more than"),  # the data's
    ],
)
def test_the_program_prints_only_the_error_line(tmp_path: Path, args, message):
    output_dir = tmp_path / "run"
    error = program_error(*train_command(output_dir, 1, *args)[2:])
    assert message in error, error
    assert not output_dir.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--epochs", "0"], "error: argument --epochs: must be >= 1; got 0"),
        (["--override", "dropout=abc"], "error: --override dropout=abc: the value is not JSON"),
        (["--override", 'num_heads="x"'], "error: --override={"),
        (["--override", "no_such_argument=1"], "no_such_argument"),
        (["--max-tokens", "1"], "error: --max-tokens must be >= --max-length"),
        (["--alpha", "-1"], "error: argument --alpha: must be a finite number >= 0"),
        (["--cooldown-epochs", "2"], "error: --cooldown-epochs must be <= --epochs"),
        (["--cooldown-epochs", "-1"], "error: argument --cooldown-epochs: must be >= 0"),
        (["--subword-sampling", "1.5"], "error: argument --subword-sampling: must be a number in"),
        (["--accumulate-steps", "0"], "error: argument --accumulate-steps: must be >= 1; got 0"),
        (["--train-steps", "6"], "error: --epochs and --train-steps exclude each other"),
        (["--save-every-steps", "4"], "error: --save-every-steps needs --train-steps"),
        (["--dataset", "shards", "--data-dir", "."], "error: no train.*.en or train.*.en.gz shard"),
        (["--accumulate-steps", "500"], "error: --accumulate-steps=500 is more than the 9 batches"),
    ],
)
def test_bad_arguments_are_one_line_and_leave_nothing(tmp_path: Path, args, message):
    output_dir = tmp_path / "run"
    error = user_error(*train_command(output_dir, 1, *args)[2:])
    assert message in error, error
    assert not output_dir.exists()


def test_a_vocabulary_the_corpus_cannot_fill_leaves_nothing(tmp_path: Path):
    output_dir = tmp_path / "run"
    args = train_command(output_dir, 1, "--train-pairs", "20", "--vocabulary-size", "5000")
    error = user_error(*args[2:])
    assert "could not learn a SentencePiece model with --vocabulary-size=5000" in error
    assert not output_dir.exists()  # in particular, no tokenizer.model for a later run


def test_a_misaligned_corpus_is_named(tmp_path: Path):
    data = tmp_path / "multi30k"
    data.mkdir()
    for split in ("train", "val", "test2016"):
        (data / f"{split}.en").write_text("a cat .\na dog .\n")
        (data / f"{split}.de").write_text(
            "eine Katze .\n" + ("" if split == "train" else "ein Hund .\n")
        )
    error = user_error("--dataset", "multi30k", "--data-dir", data, "--run-dir", tmp_path / "run")
    assert "parallel files differ in length" in error and "train.en" in error
    assert not (tmp_path / "run").exists()


def test_an_unwritable_output_dir_is_named_before_any_work(tmp_path: Path):
    (tmp_path / "a_file").write_text("not a folder")
    error = user_error("--run-dir", tmp_path / "a_file" / "run")
    assert error.startswith("error: --run-dir ") and "is a file, not a folder" in error


def test_another_runs_folder_is_refused_naming_the_settings(tmp_path: Path):
    another_runs_files(tmp_path)
    error = user_error(*train_command(tmp_path, 2)[2:])
    assert "holds a run with other settings" in error
    assert "--epochs: 5 -> 2" in error and "--vocabulary-size: 150 -> 120" in error
    assert "--overwrite" in error
    assert (tmp_path / "tokenizer.model").read_bytes() == b"another run's tokenizer"


def test_run_files_without_a_config_are_refused(tmp_path: Path):
    (tmp_path / "tokenizer.model").write_bytes(b"a tokenizer of unknown settings")
    error = user_error(*train_command(tmp_path, 2)[2:])
    assert "holds files of a run (tokenizer.model) but no config.json" in error


def test_a_run_killed_mid_epoch_resumes_from_its_step_backup_with_another_search(tmp_path: Path):
    # A kill at an epoch's end, resumed from its epoch backup, is
    # tests/system/test_signals_and_locks.py's SIGKILL (and the fault injection's points).
    epochs, every = 2, 2  # (the export, tested elsewhere, is left out)
    command = train_command(tmp_path, epochs, "--backup-every-steps", str(every), "--no-export")
    # SIGKILLed by itself at step 15, the 6th of the 9 batches of epoch 2, before its backup.
    killed = subprocess.run(
        command, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, FAULT_VARIABLE: "step:15"},
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    metadata = json.loads((tmp_path / "backup" / "training_metadata.json").read_text())
    assert (metadata["epoch"], metadata["batch"]) == (1, 4)
    assert logged_epochs(tmp_path) == [0]

    # Resumed with another search (used only once training is over): it is taken.
    search = ["--beam-size", "2", "--alpha", "0.8"]
    second = subprocess.run(
        [*command, *search], capture_output=True, text=True, timeout=600, check=False
    )
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"Epoch 1/{epochs}" not in second.stdout + second.stderr  # resumed, not restarted
    assert "training starts at epoch 2, batch 4" in second.stderr
    assert logged_epochs(tmp_path) == list(range(epochs))  # one row per epoch
    model = keras.models.load_model(tmp_path / "model.keras")
    # As many optimizer steps as a run never killed: the restart trained only the rest.
    assert int(model.optimizer.iterations) == epochs * 9
    assert not (tmp_path / "backup").exists() or not any((tmp_path / "backup").iterdir())
    for name in ("config.json", "bleu.json"):
        saved = json.loads((tmp_path / name).read_text())
        assert (saved["beam_size"], saved["alpha"]) == (2, 0.8), name
    # Once the weights are chosen, another search would change nothing: refused.
    error = user_error(*command[2:], "--beam-size", "3")
    assert "holds a run with other settings" in error and "--beam-size: 2 -> 3" in error


def test_a_run_streams_shards_by_steps(tmp_path: Path):
    from keras_attention.data.corpus_shards import write_held_out, write_sharded_corpus

    data = tmp_path / "data"
    write_sharded_corpus(data, 2000, 2)
    write_held_out(data, 30)
    output = tmp_path / "run"
    command = train_command(
        output,
        1,
        "--dataset",
        "shards",
        "--data-dir",
        str(data),
        "--train-steps",
        "6",
        "--save-every-steps",
        "3",
        "--no-export",
        *ONE_BEAM,
    )
    command.remove("--epochs")
    command.remove("1")  # --train-steps replaces --epochs
    for option in ("--train-pairs", "300"):
        command.remove(option)  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert logged_epochs(output) == [0, 1]  # two rounds of 3 steps
    assert sorted(p.name for p in (output / "checkpoints").glob("epoch_*")) == [
        "epoch_001.weights.h5", "epoch_002.weights.h5"
    ]  # fmt: skip
    assert "3/3" in done.stdout
    optimizer = keras.models.load_model(output / "model.keras").optimizer
    assert int(optimizer.iterations) == 6


def test_a_lowercased_mixed_precision_run_accumulates_gradients_over_sampled_batches(
    tmp_path: Path,
):
    # Four features in one run, to spare runs: lowercasing, bfloat16, accumulation of 2 and
    # subword sampling.
    options = ["--accumulate-steps", "2", "--mixed-precision", "mixed_bfloat16", "--lowercase"]
    options += ["--subword-sampling", "0.5", *ONE_BEAM]
    done = subprocess.run(
        train_command(tmp_path, 1, *options),
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    config = json.loads((tmp_path / "config.json").read_text())
    assert (config["accumulate_steps"], config["mixed_precision"]) == (2, "mixed_bfloat16")
    # The epoch's batches make updates of 2 (an odd one is left out): its steps are even and
    # twice the optimizer's updates.
    steps = int(re.search(r"^(\d+)/\1 ", done.stdout, re.MULTILINE).group(1))
    # Sampled: the epoch is as long as the first sampling's batches (an odd one left out).
    assert config["subword_sampling"] == 0.5
    sampled = int(re.search(r"subword sampling \(alpha 0.5\): (\d+) batches", done.stderr)[1])
    assert steps == sampled - sampled % 2
    model = keras.models.load_model(tmp_path / "model.keras")
    optimizer = model.optimizer
    assert optimizer.gradient_accumulation_steps == 2 and steps % 2 == 0
    assert int(optimizer.iterations) == steps // 2 >= 2
    assert model.dtype_policy.name == "mixed_bfloat16"
    assert json.loads((tmp_path / "test_metrics.json").read_text())["loss"] > 0
    # Lowercased: the tokenizer lowercases, with the recaser learned from the targets beside
    # it; the export (in float32) takes any case and gives the first word its capital.
    assert config["lowercase"] is True
    tokenizer = SubwordTokenizer.load(tmp_path / "tokenizer.model")
    assert tokenizer.lowercase and (tmp_path / "tokenizer.recaser.tsv").is_file()
    translate = load_exported(tmp_path / "export" / "1")
    sentences = ["Every dog runs to the city.", "EVERY DOG RUNS TO THE CITY."]
    first, second = (
        t.decode() for t in translate(sentences=tf.constant(sentences))["translations"].numpy()
    )
    assert first == second  # lowercased in the graph
    # Recased in the graph: the first word of the sentence has its capital.
    assert not any(c.isalpha() for c in first) or first != first.lower(), first


def test_validate_every_steps_counts_rounds(capsys):
    from tools.train import parse_args

    steps = ["--train-steps", "12", "--save-every-steps", "3"]
    config, _, _ = parse_args([*steps, "--validate-every-steps", "6"])
    assert config.validation_bleu_every == 2  # every second round of 3 steps
    config, _, _ = parse_args(["--train-steps", "12", "--validate-every-steps", "12"])
    assert config.validation_bleu_every == 1  # one round of all the steps
    for args, message in [
        ([*steps, "--validate-every-steps", "4"], "must be a multiple of the 3 steps of a round"),
        (["--validate-every-steps", "4"], "--validate-every-steps needs --train-steps"),
        ([*steps, "--validate-every-steps", "6", "--validation-bleu-every", "1"], "exclude"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            parse_args(args)
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err
