"""Fault injection, the CI's fast mode: a tiny `tools/train.py` run by steps, in 2 rounds, in
one folder started five times: its disk fills up (the start ends with one `error:` line), it
is SIGKILLed three times (its round-1 checkpoint half-written, in the middle of round 2, at the
end of round 2 with its log row written but not its backup), then it completes: every file of
its folder loads and its weights are an uninterrupted run's.

The long mode (32 points, each from a fresh folder) is `python tools/benchmark.py faults`. The
checks themselves must be able to fail: damaged copies of a finished folder are reported.
"""

import json
import shutil
from pathlib import Path

import pytest

from keras_attention.core.atomic_files import _parse_fault
from tools.benchmarks.fault_injection import (
    FaultConfig,
    FaultPoint,
    check_run_folder,
    format_report,
    run_fault_injection,
)

EPOCHS = 2

# Rounds of 6 steps over passes of 9 batches, a backup every 4 steps. Each start counts its
# own points, and goes on from what the one before left.
KILLS = (
    # The disk fills up after step 5: files may grow to 100 KB, so a backup (about 230 KB)
    # fails half-written, where h5py used to end the process with a segmentation fault.
    "full:step:5@100000",
    # Resumed from the step backup of round 1, killed writing that round's checkpoint.
    "write:epoch_001.weights.h5:1",
    # Resumed there again (step 4), it writes the checkpoint, then is killed at step 11, in
    # the middle of round 2: the next start resumes by step, from the backup after step 10.
    "step:7",
    # Killed at the end of round 2, its log row written but not its backup (the row must not
    # be written twice).
    "epoch_end:1",
)
POINT = FaultPoint("full disk, then checkpoint write, mid round 2 and round-2 log row", KILLS)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory):
    """The fast mode, its folders kept: one uninterrupted run by steps (2 rounds of 6 steps)
    and the run of `POINT`."""
    work_dir = tmp_path_factory.mktemp("faults")
    config = FaultConfig(
        (POINT,), work_dir=str(work_dir), epochs=EPOCHS, round_steps=6, export=False,
        references=1,
    )  # fmt: skip
    return run_fault_injection(config, progress=None), work_dir


def test_a_run_killed_three_times_completes_whole_with_the_uninterrupted_weights(report):
    report, _ = report
    assert report.reference_problems == []
    result = report.results[0]
    assert result.killed[1:] == [True, True, True], "a kill point was not reached"
    assert result.completed, result.output
    assert result.problems == []
    # On CPU a resumed run repeats the uninterrupted one exactly (same batches, same
    # dropout masks, same optimizer state).
    assert result.difference == 0.0
    assert (report.tried, report.survived) == (1, 1), format_report(report)


def test_a_full_disk_ends_the_start_with_one_line_and_the_run_then_completes(report):
    report, _ = report
    result = report.results[0]
    assert result.killed[0], "the start did not end with exactly one error line"
    assert result.completed, result.output


@pytest.fixture
def finished(report, tmp_path: Path) -> Path:
    """A copy of the uninterrupted run's folder, for a test to damage."""
    _, work_dir = report
    return Path(shutil.copytree(work_dir / "reference_0", tmp_path / "run"))


def test_a_whole_folder_passes(finished: Path):
    assert check_run_folder(finished, EPOCHS, export=False) == []


def test_a_truncated_checkpoint_is_found(finished: Path):
    path = finished / "checkpoints" / "epoch_002.weights.h5"
    path.write_bytes(path.read_bytes()[:1000])
    problems = check_run_folder(finished, EPOCHS, export=False)
    assert any("checkpoints/epoch_002.weights.h5 does not load" in p for p in problems)


def test_a_log_row_written_twice_or_cut_is_found(finished: Path):
    log = finished / "training_log.csv"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join([*lines, lines[-1]]))
    assert any("logs epochs" in p for p in check_run_folder(finished, EPOCHS, export=False))
    log.write_text("".join(lines)[:-5])
    assert any("cut" in p for p in check_run_folder(finished, EPOCHS, export=False))


def test_an_epoch_logged_twice_for_tensorboard_is_found(finished: Path):
    import tensorflow as tf

    writer = tf.summary.create_file_writer(str(finished / "logs" / "train"))
    with writer.as_default():  # what a resumed run without the repair would add
        tf.summary.scalar("epoch_loss", 1.0, step=EPOCHS - 1)
    writer.close()
    problems = check_run_folder(finished, EPOCHS, export=False)
    assert any(p.startswith("logs/train logs epochs") for p in problems), problems


def test_leftovers_and_a_stale_best_are_found(finished: Path):
    (finished / ".model.keras.abc123.keras").write_bytes(b"half-written")
    best = json.loads((finished / "validation_bleu.json").read_text())["best_epoch"]
    other = 2 if best == 1 else 1
    checkpoints = finished / "checkpoints"
    shutil.copyfile(checkpoints / f"epoch_{other:03d}.weights.h5", checkpoints / "best.weights.h5")
    problems = check_run_folder(finished, EPOCHS, export=False)
    assert "temporary file left: .model.keras.abc123.keras" in problems
    assert f"best.weights.h5 is not epoch {best}'s checkpoint" in problems


@pytest.mark.parametrize(
    ("text", "parsed"),
    [(None, None), ("", None), ("step:3", ("step", 3)), ("write:epoch_*:2", ("write:epoch_*", 2))],
)
def test_the_fault_variable_is_read(text, parsed):
    assert _parse_fault(text) == parsed


@pytest.mark.parametrize("text", ["step", "step:0", "step:x", ":2"])
def test_a_bad_fault_variable_is_named(text):
    with pytest.raises(ValueError, match="KERAS_ATTENTION_FAULT must look like POINT:N"):
        _parse_fault(text)
