"""`tools/ablate.py`, the sweep of the paper's variations: rows trained as named, a killed
sweep resumed, and the table written (on a tiny generated corpus; the results themselves are
measured in docs/paper/, not here)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.run_helpers import main_error
from tools.paper.sweep import (
    TINY_TRAIN_ARGS,
    RowResult,
    SweepConfig,
    check_settings,
    collect_results,
    row_dir,
    train_command,
)
from tools.paper.table import build_table, format_markdown
from tools.paper.variations import BASE, VARIATIONS, select

ROOT = Path(__file__).resolve().parents[2]
ROWS = ["no 1/sqrt(d_k)"]
TINY_OVERRIDES = {"num_encoder_layers": 1, "num_decoder_layers": 1, "d_model": 16, "num_heads": 2,
                  "intermediate_dim": 32}  # fmt: skip


def sweep_command(work_dir: Path, *extra: str) -> list[str]:
    return [
        sys.executable, str(ROOT / "tools" / "ablate.py"), "sweep", "--work-dir", str(work_dir),
        "--rows", *ROWS, "--train-steps", "4", "--base-seeds", "1",
        "--train-args", " ".join(TINY_TRAIN_ARGS), *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def killed_and_resumed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sweep of the base and one row, SIGKILLed once its second row has started training,
    then started again with the same command."""
    work_dir = tmp_path_factory.mktemp("sweep")
    config = SweepConfig(str(work_dir), select(ROWS), 4)
    base, second = row_dir(work_dir, BASE, 1), row_dir(work_dir, config.variations[1], 1)
    process = subprocess.Popen(
        sweep_command(work_dir), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 300
    while not (second / "config.json").exists():
        assert process.poll() is None, "the sweep ended before its second row started"
        assert time.monotonic() < deadline, "the second row did not start in 300 s"
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (second / "bleu.json").exists(), "the second row finished before the kill"
    base_written = (base / "bleu.json").stat().st_mtime_ns
    done = subprocess.run(
        sweep_command(work_dir), capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # The finished base row was not trained again.
    assert (base / "bleu.json").stat().st_mtime_ns == base_written
    return work_dir


def test_each_row_trains_with_its_variation(killed_and_resumed: Path):
    for name, overrides, smoothing in (
        (BASE.name, {}, 0.1),
        ("no 1/sqrt(d_k)", {"attention_scale": 1.0}, 0.1),
    ):
        variation = select([name])[-1]
        config = json.loads((row_dir(killed_and_resumed, variation, 1) / "config.json").read_text())
        for key, value in overrides.items():
            assert config["model_overrides"][key] == value, name
        assert config["label_smoothing"] == smoothing, name
        assert (config["train_steps"], config["seed"]) == (4, 1), name


def test_a_killed_sweep_resumes_and_writes_the_table(killed_and_resumed: Path):
    results = collect_results(
        SweepConfig(str(killed_and_resumed), select(ROWS), 4, base_seeds=(1,))
    )
    assert [r.status for r in results] == ["done", "done"]
    table = json.loads((killed_and_resumed / "ablation.json").read_text())
    assert [row["name"] for row in table["rows"]] == ROWS
    assert all(row["status"] == "done" and row["perplexity"] > 1 and row["minutes"] > 0
               for row in table["rows"])  # fmt: skip
    # The killed row's time is its resumed part's, and says so.
    assert [row["resumed"] for row in table["rows"]] == [True]
    assert table["base_resumed"] == [False]
    markdown = (killed_and_resumed / "ablation.md").read_text()
    assert "(resumed: this part) |" in markdown.splitlines()[-1]
    assert markdown.startswith("Base: BLEU") and "| no 1/sqrt(d_k) |" in markdown
    assert (killed_and_resumed / "ablation.png").stat().st_size > 1000


def test_the_records_are_a_sweep_folder_of_the_finished_rows_without_weights(
    killed_and_resumed: Path, tmp_path: Path
):
    from tools.paper.records import save_records

    config = SweepConfig(str(killed_and_resumed), select(ROWS), 4, base_seeds=(1,))
    records = tmp_path / "records"
    assert save_records(collect_results(config), killed_and_resumed, records) == 2
    kept = sorted(str(path.relative_to(records)) for path in records.rglob("*") if path.is_file())
    names = ("bleu.json", "config.json", "row_time.json", "training_log.csv")
    rows = [f"{row}/seed1/{name}" for row in ("base", "no-1-sqrt-d-k") for name in names]
    assert kept == sorted(["sweep.json", *rows])
    again = collect_results(SweepConfig(str(records), select(ROWS), 4, base_seeds=(1,)))
    assert [r.status for r in again] == ["done", "done"]
    assert build_table(again) == build_table(collect_results(config))
    # A sweep started in the records trains nothing: its rows are finished.
    check_settings(SweepConfig(str(records), select(ROWS), 4, TINY_TRAIN_ARGS, (1,)))
    with pytest.raises(ValueError, match="is the sweep folder itself"):
        save_records(again, records, records)


def test_every_row_makes_a_train_command_that_tools_train_accepts(tmp_path: Path):
    from keras_attention_cli.commands.train import parse_args

    config = SweepConfig(str(tmp_path), select(["all"]), 10, TINY_TRAIN_ARGS)
    for variation, seed in config.rows():
        train, export, _ = parse_args(train_command(config, variation, seed)[2:])
        assert (train.train_steps, train.seed, export) == (10, seed, False), variation.name
        want = {**TINY_OVERRIDES, **variation.overrides}
        assert train.model_overrides == want, variation.name
    train, _, _ = parse_args(train_command(config, select(["D smoothing=0.2"])[-1], 1)[2:])
    assert train.label_smoothing == 0.2


def test_a_row_that_changes_nothing_in_the_base_is_reported_not_trained(
    killed_and_resumed: Path, tmp_path: Path
):
    import shutil

    from tools.paper.sweep import run_sweep
    from tools.paper.variations import Variation

    work_dir = tmp_path / "sweep"
    shutil.copytree(killed_and_resumed, work_dir)
    same = Variation("same width", "extra", {"d_model": 16})  # the tiny base's own width
    config = SweepConfig(str(work_dir), [BASE, same], 4, TINY_TRAIN_ARGS, (1,))
    base, row = run_sweep(config)
    assert (base.status, row.status) == ("done", "failed")
    assert row.error == "changes nothing: the base recipe already has d_model=16"
    assert not row_dir(work_dir, same, 1).exists()
    (kept,) = collect_results(config)[1:]
    assert (kept.status, kept.error) == ("failed", row.error)


def test_another_budget_in_the_same_folder_is_refused(killed_and_resumed: Path):
    with pytest.raises(ValueError, match="train_steps=4, not 5"):
        check_settings(SweepConfig(str(killed_and_resumed), select(ROWS), 5))


def fake_run(run_dir: Path, bleu: float, perplexity: float) -> None:
    """A finished run folder's files that the table reads (a minute of training)."""
    run_dir.mkdir(parents=True)
    scores = {"bleu": bleu, "bleu_tokenized": bleu + 1}
    summary = {"model": "last", "validation": {"last": scores}}
    (run_dir / "bleu.json").write_text(json.dumps(summary))
    (run_dir / "row_time.json").write_text(json.dumps({"seconds": 60.0}))
    (run_dir / "training_log.csv").write_text(f"epoch,val_perplexity\n0,9.0\n1,{perplexity}\n")


def test_a_delta_inside_the_base_seeds_range_is_noise(tmp_path: Path):
    heads, smoothing, dropout = select(["A heads=1"])[1], *select(["D"])[1:3]
    results = []
    for seed, bleu in ((1, 30.0), (2, 31.0), (3, 32.0)):
        fake_run(tmp_path / f"base{seed}", bleu, 5.0 + seed / 10)
        results.append(RowResult(BASE, seed, tmp_path / f"base{seed}", "done"))
    for variation, bleu in ((heads, 29.0), (smoothing, 31.5)):
        fake_run(tmp_path / variation.name, bleu, 5.0)
        results.append(RowResult(variation, 1, tmp_path / variation.name, "done"))
    results.append(RowResult(dropout, 1, tmp_path / "none", "failed", error="error: diverged"))
    table = build_table(results)
    base = dict(table["base"]["bleu"])
    assert base.pop("seeds") == [30.0, 31.0, 32.0]
    assert base == pytest.approx({"mean": 31.0, "min": 30.0, "max": 32.0, "spread": 2.0})
    first, second, failed = table["rows"]
    assert (first["bleu_delta"], first["bleu_verdict"], first["agrees_with_paper"]) == (
        -2.0,
        -1,
        True,
    )
    assert (second["bleu_verdict"], second["agrees_with_paper"]) == (0, None)
    assert first["minutes"] == second["minutes"] == table["base_minutes"][0] == 1.0
    assert second["perplexity_verdict"] == 1  # lower than every base seed's
    assert failed["status"] == "failed" and "diverged" in format_markdown(table)


def test_a_table_without_a_finished_base_is_refused(tmp_path: Path):
    with pytest.raises(ValueError, match="no finished base row"):
        build_table([RowResult(BASE, 1, tmp_path, "missing")])


def test_rows_are_chosen_by_name_folder_name_or_group():
    assert [v.name for v in select(["a-heads-1", "E"])] == [
        "base",
        "A heads=1",
        "E learned positions",
    ]
    assert len(select(["all"])) == len(VARIATIONS)
    with pytest.raises(ValueError, match="unknown variation 'Z'"):
        select(["Z"])


def test_the_tool_names_an_unknown_row_in_one_line(tmp_path: Path):
    error = main_error(
        "ablate", "sweep", "--work-dir", tmp_path, "--rows", "Z", "--train-steps", "3"
    )
    assert "--rows: unknown variation 'Z'" in error
    assert not os.listdir(tmp_path)
