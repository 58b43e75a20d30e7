"""`translate` loads the model first, then answers its input batch by batch, flushing each:
a line written into a pipe held open is answered before the input ends."""

import io
import os
import select
import subprocess
import sys
import time
from pathlib import Path

from keras_attention_cli.commands import translate
from keras_attention_cli.line_batches import line_batches
from tests.runs.test_files import TinyRun
from tests.tools.test_tool_errors import run  # noqa: F401 (the finished tiny run)
from tests.tools.test_tools import ROOT, TENSORFLOW_ENV

SENTENCES = ["A man rides a bike.", "Two dogs play in the park."]


def read_line(process: subprocess.Popen, timeout: float) -> str:
    """The next line of `process`'s stdout; fails if none comes within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    data = b""
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        assert left > 0, f"no translation within {timeout} s; got {data!r}"
        if select.select([process.stdout], [], [], left)[0]:
            chunk = os.read(process.stdout.fileno(), 1)
            assert chunk, "stdout ended"
            data += chunk
    return data.decode("utf-8")[:-1]


def test_a_line_in_a_pipe_held_open_is_answered_at_once(run: TinyRun, tmp_path: Path, capsys):  # noqa: F811
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "tools" / "translate.py"), "--run-dir", str(run.path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=TENSORFLOW_ENV,
    )  # fmt: skip
    try:
        answers = []
        for sentence in SENTENCES:  # the pipe stays open between the lines
            process.stdin.write(sentence.encode() + b"\n")
            process.stdin.flush()
            answers.append(read_line(process, timeout=240))
        process.stdin.close()
        assert process.wait(timeout=60) == 0, process.stderr.read()[-3000:]
        assert process.stdout.read() == b""
    finally:
        process.kill()
        process.wait()
    # The same translations as the whole input at once, in one batch.
    (tmp_path / "input.txt").write_text("".join(s + "\n" for s in SENTENCES), encoding="utf-8")
    assert translate.main(["--run-dir", str(run.path), str(tmp_path / "input.txt")]) == 0
    assert capsys.readouterr().out.split("\n")[:-1] == answers


def test_a_file_is_read_in_full_batches(tmp_path: Path):
    path = tmp_path / "input.txt"
    path.write_text("".join(f"line {i}\n" for i in range(7)), encoding="utf-8")
    batches = list(line_batches([str(path)], 3))
    assert [len(batch) for batch in batches] == [3, 3, 1]
    assert batches[2] == ["line 6"]


def test_output_goes_to_a_file(run: TinyRun, tmp_path: Path, capsys):  # noqa: F811
    (tmp_path / "input.txt").write_text("".join(s + "\n" for s in SENTENCES), encoding="utf-8")
    arguments = ["--run-dir", str(run.path), str(tmp_path / "input.txt")]
    assert translate.main(arguments) == 0
    printed = capsys.readouterr().out
    assert translate.main([*arguments, "--output", str(tmp_path / "out.txt")]) == 0
    assert capsys.readouterr().out == ""
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == printed


class TerminalInput(io.TextIOWrapper):
    """Standard input that says it is a terminal, as a person typing gives."""

    def isatty(self) -> bool:
        return True


def test_the_ready_line_is_for_a_terminal_that_stdin_is_read_from():
    terminal = TerminalInput(io.BytesIO(b""))
    assert translate.ready_line(["-"], terminal) == translate.READY_LINE
    assert translate.ready_line(["-"], io.TextIOWrapper(io.BytesIO(b""))) is None  # a pipe
    assert translate.ready_line(["input.txt"], terminal) is None  # stdin is not read
    assert translate.ready_line(["-"], None) is None  # no standard input at all


def test_at_a_terminal_stderr_says_when_sentences_are_read(run: TinyRun, monkeypatch, capsys):  # noqa: F811
    typed = SENTENCES[0].encode() + b"\n"
    monkeypatch.setattr(sys, "stdin", TerminalInput(io.BytesIO(typed)))
    assert translate.main(["--run-dir", str(run.path)]) == 0
    at_terminal = capsys.readouterr()
    assert at_terminal.err.splitlines() == [translate.READY_LINE]
    assert len(at_terminal.out.splitlines()) == 1
    # The same input from a pipe or a file: the translations alone, nothing on stderr.
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(typed)))
    assert translate.main(["--run-dir", str(run.path)]) == 0
    piped = capsys.readouterr()
    assert (piped.out, piped.err) == (at_terminal.out, "")


def test_an_output_file_is_whole_or_absent(tmp_path: Path):
    path = tmp_path / "out.txt"
    path.write_text("the last run's translations\n", encoding="utf-8")
    try:
        with translate.open_output(str(path)) as output:
            output.write("a first translation\n")
            output.flush()
            assert path.read_text(encoding="utf-8") == "the last run's translations\n"
            raise KeyboardInterrupt  # Ctrl-C half-way
    except KeyboardInterrupt:
        pass
    assert path.read_text(encoding="utf-8") == "the last run's translations\n"
    assert os.listdir(tmp_path) == ["out.txt"]  # no part file left
    with translate.open_output(str(path)) as output:
        output.write("line 1\nline 2\n")
    assert path.read_text(encoding="utf-8") == "line 1\nline 2\n"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_sigterm_half_way_leaves_no_output_file(run: TinyRun, tmp_path: Path):  # noqa: F811
    output = tmp_path / "out.txt"
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "tools" / "translate.py"), "--run-dir", str(run.path),
         "--output", str(output)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=TENSORFLOW_ENV,
    )  # fmt: skip
    try:
        process.stdin.write(SENTENCES[0].encode() + b"\n")
        process.stdin.flush()  # the pipe stays open: the first line is answered at once
        deadline = time.monotonic() + 240
        while not any(path.stat().st_size for path in tmp_path.iterdir()):
            assert time.monotonic() < deadline, "no translation written within 240 s"
            assert process.poll() is None, process.stderr.read()[-3000:]
            time.sleep(0.1)
        process.terminate()
        assert process.wait(timeout=60) != 0
        stderr = process.stderr.read().decode()
    finally:
        process.kill()
        process.wait()
    assert "it writes no file" in stderr, stderr[-3000:]
    assert os.listdir(tmp_path) == []  # neither out.txt nor its part file
