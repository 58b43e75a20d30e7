"""`tools/train.py` end to end: the files of a run, and resuming after SIGKILL."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import keras
import pytest

import keras_attention  # noqa: F401 (registers the classes that load_model reads)
from tests.run_helpers import kill_when, logged_epochs, read_metadata

ROOT = Path(__file__).resolve().parents[1]
TINY = [
    "--train-pairs", "300", "--vocabulary-size", "120", "--max-tokens", "512",
    "--max-length", "32", "--warmup-steps", "20", "--no-jit",
    "--override", "num_encoder_layers=1", "--override", "num_decoder_layers=1",
    "--override", "d_model=16", "--override", "num_heads=2",
    "--override", "intermediate_dim=32",
]  # fmt: skip


def train_command(output_dir: Path, epochs: int, *extra: str) -> list[str]:
    return [
        sys.executable, str(ROOT / "tools" / "train.py"), "--output-dir", str(output_dir),
        "--epochs", str(epochs), *TINY, *extra,
    ]  # fmt: skip


def test_help_lists_the_options():
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "train.py"), "--help"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    for option in ("--preset", "--dataset", "--data-dir", "--epochs", "--max-tokens", "--devices",
                   "--output-dir", "--jit", "--mixed-precision"):  # fmt: skip
        assert option in done.stdout


def test_a_run_writes_every_file(tmp_path: Path):
    done = subprocess.run(
        train_command(tmp_path, 2), capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for name in ("config.json", "tokenizer.model", "training_log.csv", "model.keras",
                 "test_metrics.json", "checkpoints/epoch_001.weights.h5",
                 "checkpoints/epoch_002.weights.h5", "checkpoints/best.weights.h5",
                 "validation_bleu.json", "learning_curve.png", "bleu.json"):  # fmt: skip
        assert (tmp_path / name).exists(), name
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
    assert any((tmp_path / "logs").rglob("events.out.tfevents.*"))
    assert not (tmp_path / "backup").exists() or not any((tmp_path / "backup").iterdir())
    assert json.loads((tmp_path / "config.json").read_text())["epochs"] == 2
    assert logged_epochs(tmp_path) == [0, 1]
    metrics = json.loads((tmp_path / "test_metrics.json").read_text())
    assert 0.0 <= metrics["accuracy"] <= 1.0
    model = keras.models.load_model(tmp_path / "model.keras")
    assert model.d_model == 16


def test_bad_arguments_are_named(tmp_path: Path):
    done = subprocess.run(
        train_command(tmp_path, 0), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode != 0
    assert "epochs must be a positive integer; got epochs=0" in done.stderr


def test_a_killed_run_resumes_from_its_last_backup(tmp_path: Path):
    epochs = 6
    kill_when(
        train_command(tmp_path, epochs, "--train-pairs", "1500"),
        lambda: bool(logged_epochs(tmp_path)),
    )
    done_before_kill = logged_epochs(tmp_path)
    assert done_before_kill, "no epoch finished before the deadline"
    assert len(done_before_kill) < epochs, "the run finished before it was killed"

    second = subprocess.run(
        train_command(tmp_path, epochs, "--train-pairs", "1500"),
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"Epoch 1/{epochs}" not in second.stdout + second.stderr  # resumed, not restarted
    epochs_logged = logged_epochs(tmp_path)
    assert epochs_logged[: len(done_before_kill)] == done_before_kill
    assert epochs_logged == sorted(set(epochs_logged))  # no epoch trained twice
    assert epochs_logged[-1] == epochs - 1
    assert (tmp_path / "model.keras").exists()


@pytest.mark.parametrize("policy", ["mixed_bfloat16"])
def test_mixed_precision_run(tmp_path: Path, policy: str):
    done = subprocess.run(
        train_command(tmp_path, 1, "--mixed-precision", policy),
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads((tmp_path / "test_metrics.json").read_text())["loss"] > 0


def backup_batch(output_dir: Path) -> int:
    """The batch of the current epoch that the step-level backup holds (0 without one)."""
    metadata = read_metadata(output_dir / "backup" / "training_metadata.json")
    return int(metadata.get("batch", 0)) if metadata else 0


def test_a_run_killed_mid_epoch_resumes_from_its_step_backup(tmp_path: Path):
    epochs, every = 3, 2
    command = train_command(
        tmp_path, epochs, "--train-pairs", "1500", "--backup-every-steps", str(every), "--no-export"
    )
    kill_when(command, lambda: backup_batch(tmp_path) >= 4)
    metadata = json.loads((tmp_path / "backup" / "training_metadata.json").read_text())
    assert metadata["batch"] >= 4 and metadata["batch"] % every == 0

    second = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert second.returncode == 0, second.stderr[-3000:]
    assert logged_epochs(tmp_path) == list(range(epochs))  # one row per epoch
    model = keras.models.load_model(tmp_path / "model.keras")
    steps = int(second.stdout.split(f"Epoch {epochs}/{epochs}")[1].split("/")[0].split()[-1])
    # As many optimizer steps as a run never killed: the restart trained only the rest.
    assert int(model.optimizer.iterations) == epochs * steps
    assert not (tmp_path / "backup").exists() or not any((tmp_path / "backup").iterdir())
