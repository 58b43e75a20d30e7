"""`tools/run_tests.sh`: every phase runs whatever the others did, and the summary names the
phases that failed.

The script runs with a stand-in `python` first on `PATH` that records each phase's command
and fails the ones asked for, so that the script's own logic is checked in a second.
"""

import os
import stat
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "tools" / "run_tests.sh"
PHASES = ["TensorFlow suite", "doctests", "PyTorch", "JAX", "documentation site"]

# Records its arguments, one call a line, then fails when they contain $FAIL_WHEN (a word of
# the phase's command); the docs phase's MkDocs also prints an INFO and a WARNING line.
FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$CALLS"
if [[ "$*" == *mkdocs* ]]; then
  echo "INFO    -  Building documentation"
  echo "WARNING -  a warning that strict mode counts"
fi
for word in $FAIL_WHEN; do
  if [[ "$*" == *"$word"* ]]; then exit 3; fi
done
exit 0
"""


def run_script(tmp_path: Path, fail_when: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    calls = tmp_path / "calls.txt"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(calls)}
    env["FAIL_WHEN"] = fail_when
    result = subprocess.run(
        ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60
    )
    return result, calls.read_text().splitlines()


def test_every_phase_passing_ends_with_success(tmp_path: Path):
    result, calls = run_script(tmp_path, fail_when="")
    assert result.returncode == 0, result.stderr
    assert len(calls) == len(PHASES)
    assert "every phase passed" in result.stderr
    for phase in PHASES:
        assert f"{phase}: passed" in result.stderr


@pytest.mark.parametrize(
    ("fail_when", "failed"),
    [
        ("--durations=20", ["TensorFlow suite"]),
        ("--doctest-modules mkdocs", ["doctests", "documentation site"]),
    ],
)
def test_a_failing_phase_hides_no_other_and_is_named(tmp_path: Path, fail_when, failed):
    result, calls = run_script(tmp_path, fail_when=fail_when)
    assert result.returncode == 1
    assert len(calls) == len(PHASES), "a later phase did not run"
    assert f"FAILED phases: {', '.join(failed)}" in result.stderr
    for phase in PHASES:
        verdict = "FAILED (exit 3)" if phase in failed else "passed"
        assert f"{phase}: {verdict}" in result.stderr


def test_the_docs_phase_is_strict_and_shows_warnings_not_info(tmp_path: Path):
    result, calls = run_script(tmp_path, fail_when="")
    docs = [call for call in calls if "mkdocs" in call]
    assert len(docs) == 1 and "--strict" in docs[0].split()
    assert "--quiet" not in docs[0].split(), "--quiet hides warnings from strict mode"
    assert "a warning that strict mode counts" in result.stdout
    assert "Building documentation" not in result.stdout
