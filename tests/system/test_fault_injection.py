"""Fault injection, the CI's fast mode: a tiny `tools/train.py` run by steps, in 2 rounds,
SIGKILLed twice (its round-1 checkpoint half-written, then the end of round 2 with its log row
written but not its backup), then completed: every file of its folder loads and its weights
are an uninterrupted run's; another killed in the middle of round 2, resumed by step; and one
whose disk fills up (it ends with one `error:` line, then completes once there is space).

The long mode (25 points) is `python tools/benchmark.py faults`. The checks themselves must be
able to fail: damaged copies of a finished folder are reported.
"""

import json
import shutil
from pathlib import Path

import pytest

from keras_attention.core.atomic_files import _parse_fault
from tools.benchmarks.fault_injection import (
    FAST_POINTS,
    FaultConfig,
    FaultPoint,
    check_run_folder,
    format_report,
    run_fault_injection,
)

EPOCHS = 2


# Killed at its 10th step, a start resumes from the step backup after step 8 (a backup every
# 4 steps), in the middle of round 2, which crosses a pass end (passes of 9 batches).
MID_ROUND = FaultPoint("mid round 2, across a pass end", ("step:10",))
# The disk fills up after step 5: files may grow to 100 KB, so the step backup after step 8
# (about 230 KB) fails half-written, where h5py used to end the process with a segmentation
# fault. The start must end with one `error:` line; once there is space, the run completes.
DISK_FULL = FaultPoint("disk full mid round 1, a step backup half-written", ("full:step:5@100000",))


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory):
    """The fast mode, its folders kept, trained by steps (2 rounds of 6 steps over passes of
    9 batches): one uninterrupted run, its point of two kills, a kill in mid-round, and a disk
    that fills up."""
    work_dir = tmp_path_factory.mktemp("faults")
    config = FaultConfig(
        (*FAST_POINTS, MID_ROUND, DISK_FULL), work_dir=str(work_dir), epochs=EPOCHS, round_steps=6,
        export=False, references=1,
    )  # fmt: skip
    return run_fault_injection(config, progress=None), work_dir


def test_a_run_killed_twice_completes_whole_with_the_uninterrupted_weights(report):
    report, _ = report
    assert report.reference_problems == []
    result = report.results[0]
    assert result.killed == [True, True], "a kill point was not reached"
    assert result.completed, result.output
    assert result.problems == []
    # On CPU a resumed run repeats the uninterrupted one exactly (same batches, same
    # dropout masks, same optimizer state).
    assert result.difference == 0.0
    assert (report.tried, report.survived) == (3, 3), format_report(report)


def test_a_step_run_killed_mid_round_resumes_by_step(report):
    report, _ = report
    result = report.results[1]
    assert result.point == MID_ROUND
    assert result.killed == [True] and result.completed, result.output
    assert result.problems == []
    assert result.difference == 0.0  # the uninterrupted weights


def test_a_full_disk_ends_the_run_with_one_line_and_it_then_completes(report):
    report, _ = report
    result = report.results[2]
    assert result.point == DISK_FULL
    assert result.killed == [True], "the start did not end with exactly one error line"
    assert result.completed, result.output
    assert result.problems == []
    assert result.difference == 0.0


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
