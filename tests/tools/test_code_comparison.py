"""`tools/benchmark.py compare`: old and new code side by side (benchmarks/code_comparison.py)."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tools.benchmarks import code_comparison
from tools.benchmarks.code_comparison import (
    ComparisonConfig,
    compare_samples,
    format_comparison,
    run_benchmark,
    run_comparison,
    side_order,
    snapshot,
    throughputs,
)

ROOT = Path(__file__).resolve().parents[2]


def test_throughputs_name_each_benchmark_s_figures():
    train = {"config": {"steps": 3}, "runs": {"ours/bucketed/jit": {"tokens_per_second": 10}}}
    assert throughputs("train", train) == {"ours/bucketed/jit tokens/s": 10.0}
    decode = {
        "sentences_per_second": {"greedy": {"cached": 5, "recomputed": 2, "speedup": 2.5}},
        "export": {"exported": 4, "in_library": 3, "ratio_exported_over_library": 1.3},
        "int8": {"size_ratio": 0.3, "beam4": {"float32": 7, "int8": 6, "speedup": 0.9}},
    }
    assert throughputs("decode", decode) == {
        "greedy cached sent/s": 5.0,
        "greedy recomputed sent/s": 2.0,
        "exported translator sent/s": 4.0,
        "in_library translator sent/s": 3.0,
        "beam4 float32 model sent/s": 7.0,
        "beam4 int8 model sent/s": 6.0,
    }
    serve = {"rows": [{"variant": "export", "batch_size": 8, "callers": 2,
                       "sentences_per_s": 9, "p50_ms": 3}]}  # fmt: skip
    assert throughputs("serve", serve) == {"export, 8 x 2 callers sent/s": 9.0}


def test_compare_samples_calls_a_change_within_the_noise_noise():
    old = [
        {"a_per_second": 100.0, "b_per_second": 100.0, "c_per_second": 100.0},
        {"a_per_second": 104.0, "b_per_second": 100.0, "c_per_second": 100.0},
    ]
    new = [{"a_per_second": 103.0, "b_per_second": 120.0, "c_per_second": 80.0, "d": 1.0},
           {"a_per_second": 105.0, "b_per_second": 122.0, "c_per_second": 81.0}]  # fmt: skip
    rows = {row["name"]: row for row in compare_samples(old, new)}
    assert sorted(rows) == ["a_per_second", "b_per_second", "c_per_second"]
    assert rows["a_per_second"]["noise"] == pytest.approx(4 / 102)
    assert rows["a_per_second"]["ratio"] == pytest.approx(104 / 102)
    assert rows["a_per_second"]["verdict"] == "noise"
    assert rows["b_per_second"]["ratio"] == pytest.approx(1.21)
    assert rows["b_per_second"]["verdict"] == "faster"
    assert rows["c_per_second"]["verdict"] == "slower"


def test_the_sides_alternate_which_goes_first():
    assert [side_order(repeat) for repeat in range(3)] == [
        ("old", "new"), ("new", "old"), ("old", "new")
    ]  # fmt: skip


def test_a_snapshot_holds_the_revision_s_files(tmp_path: Path):
    folder = snapshot("HEAD", tmp_path / "old", ROOT)
    committed = subprocess.run(
        ["git", "show", "HEAD:keras_attention/__init__.py"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert (folder / "keras_attention" / "__init__.py").read_text() == committed
    assert (folder / "tools" / "benchmark.py").is_file()


def test_an_unknown_revision_is_named(tmp_path: Path):
    with pytest.raises(ValueError, match="--baseline 'no-such-revision'"):
        snapshot("no-such-revision", tmp_path / "old", ROOT)


@pytest.mark.parametrize(
    ("changes", "message"),
    [({"repeats": 1}, "repeats must be >= 2"), ({"benchmarks": ("train", "x")}, "unknown")],
)
def test_bad_settings_are_named(changes: dict, message: str):
    with pytest.raises(ValueError, match=message):
        ComparisonConfig(baseline="HEAD", **changes)


def test_each_run_uses_its_side_s_code_with_the_same_arguments(tmp_path: Path, monkeypatch):
    calls = []

    def runner(side_root, benchmark, arguments, json_path, cwd):
        calls.append((side_root, benchmark, arguments, cwd))
        speed = 10.0 if side_root == code_comparison.REPO_ROOT else 5.0
        return {"runs": {"x": {"tokens_per_second": speed + len(calls) % 2}}}

    config = ComparisonConfig(
        baseline="HEAD", benchmarks=("train", "decode"), repeats=2, quick=True,
        work_dir=str(tmp_path),
    )  # fmt: skip
    result = run_comparison(config, progress=lambda line: None, runner=runner)
    roots = [call[0] for call in calls]
    new = code_comparison.REPO_ROOT
    assert [root == new for root in roots] == [False, True, True, False] * 2
    old_root = roots[0]
    assert old_root != new and old_root.name == "old" and old_root.parent.parent == tmp_path
    assert {call[1] for call in calls[:4]} == {"train"}
    assert [call[2] for call in calls[4:]] == [["--no-engines", "--quick"]] * 4
    assert {call[3] for call in calls} == {new}
    row = result["rows"]["train"][0]
    assert row["name"] == "x tokens/s" and row["ratio"] == pytest.approx(10.5 / 5.5)
    assert "x tokens/s" in format_comparison(result)
    assert list(tmp_path.iterdir()) == []  # the snapshot is removed


def test_a_benchmark_runs_with_its_side_s_package_first(tmp_path: Path):
    """`run_benchmark` starts the side's own tools/benchmark.py, with that side's package
    first on the path, and reads back the JSON it wrote."""
    side = tmp_path / "side"
    (side / "tools").mkdir(parents=True)
    (side / "keras_attention").mkdir()
    (side / "keras_attention" / "__init__.py").write_text("SIDE = 'old'\n")
    (side / "tools" / "benchmark.py").write_text(
        textwrap.dedent("""
        import json, sys
        import keras_attention
        json_path = sys.argv[sys.argv.index("--json") + 1]
        result = {"side": keras_attention.SIDE, "argv": sys.argv[1:-2]}
        open(json_path, "w").write(json.dumps(result))
    """)
    )
    result = run_benchmark(side, "train", ["--quick"], tmp_path / "out.json", tmp_path)
    assert result == {"side": "old", "argv": ["train", "--quick"]}
    (side / "tools" / "benchmark.py").write_text("raise SystemExit(3)\n")
    with pytest.raises(RuntimeError, match="failed"):
        run_benchmark(side, "train", [], tmp_path / "out2.json", tmp_path)


def test_the_command_names_a_bad_baseline_in_one_line(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "tools/benchmark.py", "compare", "--baseline", "no-such-revision",
         "--work-dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1].startswith("error: --baseline 'no-such-revision'")
    assert "Traceback" not in done.stderr
