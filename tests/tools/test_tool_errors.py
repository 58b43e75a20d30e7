"""User errors of the command-line tools: one line, `error: ...`, exit status 2, no traceback.

Each tool's `main` runs in the test's process (a few run as programs, as a user would run
them), on the session's run folder made without training (`finished_tiny_run`). Output paths
are checked before any work: nothing is loaded, translated or written. Missing and corrupt files
(truncated `model.keras` and `.weights.h5`, a broken `config.json`) and input that is not
UTF-8 are named, with the line for text.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from keras_attention.runs.translate_function import load_translate_function
from keras_attention_cli.arguments import ArgumentParser, int_at_least, non_negative_float
from keras_attention_cli.errors import UserError
from keras_attention_cli.files import check_output_dir, check_output_file, read_input_lines
from tests.run_helpers import NATIVE_LOG_LINE, main_error
from tests.runs.test_files import TinyRun
from tests.tools.test_tools import ROOT, TENSORFLOW_ENV


@pytest.fixture(scope="module")
def run(tiny_run: TinyRun, finished_tiny_run: Path) -> TinyRun:
    """The session's tiny run folder, finished: with `model.keras` (tests/conftest.py)."""
    return TinyRun(finished_tiny_run, tiny_run.weights)


@pytest.fixture
def run_copy(run: TinyRun, tmp_path: Path) -> Path:
    """A copy of the run folder that a test may damage."""
    return Path(shutil.copytree(run.path, tmp_path / "run"))


def truncate(path: Path) -> Path:
    """Cuts `path` to half its size, as a copy or a write that stopped half-way would."""
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return path


def user_error(tool: str, *args: str | Path, stdin: bytes = b"") -> str:
    """Runs the `main` of `tools/<tool>.py` in this process, which must fail with a user
    error (`main_error`); `program_error` runs the tool as a program, where no traceback nor
    TensorFlow line may come either."""
    return main_error(tool, *args, stdin=stdin)


def program_error(tool: str, *args: str | Path, stdin: bytes = b"") -> str:
    """Runs `tools/<tool>.py` with `args` as a program, which must fail with a user error;
    returns the error.

    The error is one line, `error: ...`, and nothing else on stderr, with exit status 2 and
    no traceback; nothing was printed on stdout.
    """
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / f"{tool}.py"), *map(str, args)],
        input=stdin, capture_output=True, timeout=300, env=TENSORFLOW_ENV, check=False,
    )  # fmt: skip
    stderr = done.stderr.decode("utf-8", errors="replace")
    assert done.returncode == 2, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr[-3000:]
    assert done.stdout == b""
    return lines[0]


# Output paths: checked before any work.


@pytest.mark.parametrize(
    ("tool", "args", "option", "output"),
    [
        ("evaluate", ["--run-dir", "{run}"], "--output", "{missing}/hypotheses.txt"),
        (
            "average_checkpoints",
            ["--run-dir", "{run}", "--last", "2"],
            "--output",
            "{missing}/avg.keras",
        ),
        ("export", ["--run-dir", "{run}"], "--output", "{file}/export"),
    ],
)
def test_an_unwritable_output_is_named_before_any_work(
    run: TinyRun, tmp_path: Path, tool: str, args: list[str], option: str, output: str
):
    (tmp_path / "a_file").write_text("not a folder")
    names = {"run": run.path, "missing": tmp_path / "missing", "file": tmp_path / "a_file"}
    output = output.format(**names)
    error = user_error(tool, *(arg.format(**names) for arg in args), option, output)
    assert f"{option} {output}:" in error
    assert str(tmp_path / ("a_file" if tool == "export" else "missing")) in error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]  # nothing written
    assert sorted(p.name for p in run.path.iterdir()) == [
        "checkpoints", "config.json", "model.keras", "tokenizer.model"
    ]  # fmt: skip


@pytest.mark.parametrize("content", [None, "", " \n\n"], ids=["missing", "empty", "blank"])
def test_a_bad_warmup_file_is_named_before_any_work(
    run: TinyRun, tmp_path: Path, content: str | None
):
    warmup = tmp_path / "warmup.txt"
    if content is not None:
        warmup.write_text(content)
    error = user_error("export", "--run-dir", run.path, "--output", tmp_path / "export",
                       "--warmup-file", warmup)  # fmt: skip
    assert str(warmup) in error
    assert not (tmp_path / "export").exists()


# Input text that is not UTF-8: the file (or <stdin>) and the line.


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_input_that_is_not_utf8_is_named_with_its_line(run: TinyRun, tmp_path: Path, source):
    text = b"A man rides a bike.\nTwo dogs \xff\xfe play.\n"
    path = tmp_path / "input.txt"
    path.write_bytes(text)
    if source == "file":
        error = user_error("translate", "--run-dir", run.path, path)
        assert error.startswith(f"error: {path}:2: not valid UTF-8")
    else:  # as a program: the whole path from the bytes on the process's stdin
        error = program_error("translate", "--run-dir", run.path, stdin=text)
        assert error.startswith("error: <stdin>:2: not valid UTF-8")


# Corrupt files: named, and called corrupt.


def test_a_truncated_model_keras_is_called_corrupt(run_copy: Path):
    path = truncate(run_copy / "model.keras")  # Keras itself says "File not found"
    error = user_error("translate", "--run-dir", run_copy, stdin=b"A man.\n")
    assert f"{path} is corrupt" in error


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("evaluate", ["--run-dir", "{run}", "--checkpoint", "epoch_002.weights.h5"]),
        (
            "average_checkpoints",
            ["--run-dir", "{run}", "--last", "2", "--output", "{run}/avg.weights.h5"],
        ),
    ],
)
def test_a_truncated_checkpoint_is_called_corrupt(run_copy: Path, tool: str, args: list[str]):
    path = truncate(run_copy / "checkpoints" / "epoch_002.weights.h5")
    error = user_error(tool, *(arg.format(run=run_copy) for arg in args))
    assert f"checkpoint {path} is corrupt" in error
    assert not (run_copy / "avg.weights.h5").exists()


def test_a_corrupt_config_json_is_named(run_copy: Path):
    path = truncate(run_copy / "config.json")
    error = user_error("evaluate", "--run-dir", run_copy)
    assert error.startswith(f"error: {path} is corrupt: not valid JSON")


# The shared pieces, in-process.


def test_check_output_file_and_dir(tmp_path: Path):
    check_output_file(tmp_path / "new.txt", "--out")  # a new file in an existing folder
    check_output_dir(tmp_path / "new" / "nested", "--dir")  # created with its parents
    with pytest.raises(UserError, match=re.escape(f"--out {tmp_path}: is a folder")):
        check_output_file(tmp_path, "--out")
    with pytest.raises(UserError, match=re.escape(f"folder {tmp_path / 'missing'} does not")):
        check_output_file(tmp_path / "missing" / "new.txt", "--out")
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError, match="file is a file, not a folder"):
        check_output_dir(tmp_path / "file" / "export", "--dir")


def test_argument_errors_are_one_line(capsys):
    parser = ArgumentParser(prog="tool")
    parser.add_argument("--beam-size", type=int_at_least(1))
    parser.add_argument("--alpha", type=non_negative_float)
    for args in (["--beam-size", "0"], ["--beam-size", "x"], ["--alpha", "-1"], ["--nope"]):
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args(args)
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {'unrecognized' if args == ['--nope'] else 'argument'}")
        assert err.count("\n") == 1 and args[0] in err


@pytest.mark.parametrize("content", [None, b"not a protobuf"])
def test_a_missing_or_corrupt_saved_model_is_named(tmp_path: Path, content: bytes | None):
    if content is not None:
        (tmp_path / "saved_model.pb").write_bytes(content)
    kind = FileNotFoundError if content is None else ValueError
    with pytest.raises(kind, match=re.escape(str(tmp_path))) as error:
        load_translate_function(saved_model=tmp_path)
    assert content is None or "is corrupt" in str(error.value)


def test_read_input_lines_names_a_missing_or_undecodable_file(tmp_path: Path):
    (tmp_path / "a.txt").write_bytes(b"eins\r\nzwei\n")
    assert read_input_lines([str(tmp_path / "a.txt")] * 2) == ["eins", "zwei"] * 2
    with pytest.raises(UserError, match=re.escape(f"input file {tmp_path / 'b.txt'} does not")):
        read_input_lines([str(tmp_path / "b.txt")])
    with pytest.raises(UserError, match=re.escape(f"input {tmp_path} is a folder")):
        read_input_lines([str(tmp_path)])
    (tmp_path / "c.txt").write_bytes(b"ok\n\xe9t\xe9\n")  # Latin-1
    with pytest.raises(UserError, match=re.escape(f"{tmp_path / 'c.txt'}:2: not valid UTF-8")):
        read_input_lines([str(tmp_path / "c.txt")])


# TensorFlow's start-up lines: hidden unless --verbose.


@pytest.mark.parametrize("verbose", [False, True])
def test_tensorflow_start_up_lines_only_with_verbose(verbose: bool, tmp_path: Path):
    """An error found once the arguments parse, when TensorFlow has started (an argument
    error comes before it starts: tests/system/test_deferred_import.py)."""
    env = {k: v for k, v in TENSORFLOW_ENV.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder")
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "train.py"), "--run-dir", str(a_file),
         *(["--verbose"] if verbose else [])],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    errors = [line for line in lines if line.startswith(f"error: --run-dir {a_file}")]
    assert len(errors) == 1, done.stderr[-3000:]
    if verbose:  # TensorFlow's lines (the check above can see them), then the error
        assert any(NATIVE_LOG_LINE.fullmatch(line) for line in lines), done.stderr[-3000:]
    else:
        assert lines == errors


# tools/make_corpus_shards.py: its arguments and output folder, before any work.


def test_corpus_shards_refuse_fewer_pairs_than_shards(tmp_path: Path):
    error = user_error("make_corpus_shards", "--pairs", "2", "--shards", "4",
                       "--output", tmp_path / "out")  # fmt: skip
    assert error == "error: --pairs 2 is fewer than --shards 4"
    assert not (tmp_path / "out").exists()


def test_corpus_shards_name_an_output_that_is_a_file(tmp_path: Path):
    (tmp_path / "a_file").write_text("not a folder")
    error = user_error("make_corpus_shards", "--pairs", "8", "--shards", "2",
                       "--output", tmp_path / "a_file")  # fmt: skip
    assert f"--output {tmp_path / 'a_file'}" in error


@pytest.mark.parametrize(
    "flags, warned",
    [
        ("--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit", True),
        ("--tf_xla_cpu_global_jit", True),
        ("--tf_xla_auto_jit=0 --tf_xla_cpu_global_jit", False),
        ("--tf_xla_auto_jit=2", False),
        (None, False),
    ],
)
def test_a_tool_warns_of_tensorflows_global_cpu_auto_clustering(
    flags: str | None, warned: bool, monkeypatch, capsys
):
    from keras_attention_cli.errors import run_command

    if flags is None:
        monkeypatch.delenv("TF_XLA_FLAGS", raising=False)
    else:
        monkeypatch.setenv("TF_XLA_FLAGS", flags)
    assert run_command(lambda: print("done")) == 0
    captured = capsys.readouterr()
    assert captured.out == "done\n"
    lines = captured.err.splitlines()
    assert len(lines) == int(warned)
    if warned:
        assert lines[0].startswith("warning: TF_XLA_FLAGS turns on TensorFlow's global CPU")
