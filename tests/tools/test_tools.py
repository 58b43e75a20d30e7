"""The command-line tools on one tiny run folder: averaging, export, translation, evaluation.

The tools' `main` runs in this process, on the session's finished tiny run (made without
training, `finished_tiny_run` in tests/conftest.py) and its SavedModel (`tiny_saved_model`);
`--help` runs each tool as a program. A tool run as a program, as a user runs it:
tests/tools/test_translate_stream.py, tests/tools/test_tool_errors.py and
tests/system/test_deferred_import.py. The tools are TensorFlow-only, so they always run on
TensorFlow.
"""

import contextlib
import importlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from unittest import mock

import keras
import numpy as np
import pytest
import sacrebleu

import keras_attention  # noqa: F401 (registers the classes that load_model reads)
from keras_attention.data.datasets import load_corpus
from tests.run_helpers import main_error
from tests.tools.test_train import ROOT

# Each tool with an option of its own that its --help must list.
TOOLS = {
    "average_checkpoints": "--last",
    "export": "--overwrite",
    "translate": "--scores",
    "evaluate": "--source",
}
SENTENCES = [
    "A man rides a bike.",
    "",
    "Two dogs play in the park today.",
    "Die Katze schläft.",
    "The woman eats an apple.",
]
TENSORFLOW_ENV = {**os.environ, "KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "3"}
SCORE_LINE = re.compile(r"(-?\d+\.\d{4})\t(.*)")


def run_tool(tool: str, *args: str | Path, stdin: str = "", timeout: int = 300):
    """Runs `tools/<tool>.py` with `args` on TensorFlow; returns the finished process."""
    return subprocess.run(
        [sys.executable, str(ROOT / "tools" / f"{tool}.py"), *map(str, args)],
        input=stdin, capture_output=True, text=True, timeout=timeout, env=TENSORFLOW_ENV,
        check=False,
    )  # fmt: skip


def run_ok(tool: str, *args: str | Path, stdin: str = "") -> str:
    """Runs the `main` of a tool in this process, with `stdin`; it must succeed. Returns what
    it printed."""
    main = importlib.import_module(f"tools.{tool}").main
    printed = io.StringIO()
    with (
        contextlib.redirect_stdout(printed),
        mock.patch.object(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode()))),
    ):
        assert main([str(arg) for arg in args]) == 0
    return printed.getvalue()


def output_lines(stdout: str) -> list[str]:
    """The lines printed, empty ones included (`splitlines` would also split at U+2028)."""
    assert stdout.endswith("\n")
    return stdout[:-1].split("\n")


def scored_lines(stdout: str) -> tuple[list[float], list[str]]:
    """Splits `--scores` output into the scores and the translations."""
    matches = [SCORE_LINE.fullmatch(line) for line in output_lines(stdout)]
    assert all(matches), stdout
    return [float(m.group(1)) for m in matches], [m.group(2) for m in matches]


def checkpoint_weights(run_dir: Path, epoch: int) -> list[np.ndarray]:
    model = keras.models.load_model(run_dir / "model.keras")
    model.load_weights(run_dir / "checkpoints" / f"epoch_{epoch:03d}.weights.h5")
    return model.get_weights()


def check_evaluation_output(
    stdout: str, hypotheses_file: Path, count: int, seed: int, as_json: bool = False
) -> None:
    """The model scored, score lines with signatures equal to sacreBLEU of the hypotheses
    written against the first `count` references of the generated test split of `seed`,
    then, with `as_json` (`--json`), the unrounded scores as a last JSON line; without it,
    readable lines only."""
    lines = output_lines(stdout)
    assert lines[0].startswith("model: ")
    lines = lines[1:]
    assert lines[0] == f"generated test split (seed {seed}): {count} sentences"
    assert re.fullmatch(r"BLEU \d+\.\d\d  \(.*case:mixed.*tok:13a.*\)", lines[1])
    assert re.fullmatch(r"chrF \d+\.\d\d  \(.*case:mixed.*\)", lines[2])
    assert re.fullmatch(r"BLEU \(lowercased\) \d+\.\d\d  \(.*case:lc.*tok:13a.*\)", lines[3])
    assert lines[4].startswith("BLEU (lowercased, Moses-tokenized) ")
    hypotheses = output_lines(hypotheses_file.read_text(encoding="utf-8"))
    assert len(hypotheses) == count
    references = load_corpus("generated", seed=seed, train_pairs=0)["test"][1][:count]
    chrf = sacrebleu.corpus_chrf(hypotheses, [references]).score
    bleu = sacrebleu.corpus_bleu(hypotheses, [references], tokenize="13a").score
    assert lines[1].startswith(f"BLEU {bleu:.2f}  ") and lines[2].startswith(f"chrF {chrf:.2f}  ")
    if not as_json:
        assert len(lines) == 5, lines  # no line for programs after the score lines
        return
    assert len(lines) == 6, lines
    values = json.loads(lines[-1])  # the last line, after every score line
    assert set(values) == {"bleu", "chrf", "bleu_lc"}
    assert all(0.0 <= value <= 100.0 for value in values.values())
    assert values["chrf"] == pytest.approx(chrf, abs=1e-9)
    assert values["bleu"] == pytest.approx(bleu, abs=1e-9)


@pytest.fixture(scope="module")
def run_dir(finished_tiny_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the session's finished tiny run that the tools write into."""
    return Path(shutil.copytree(finished_tiny_run, tmp_path_factory.mktemp("tools") / "run"))


@pytest.fixture(scope="module")
def saved_model(run_dir: Path, tiny_saved_model: Path) -> Path:
    """The run's SavedModel (beam size 2) as version 1 of its default export folder."""
    return Path(shutil.copytree(tiny_saved_model, run_dir / "export" / "1"))


@pytest.mark.parametrize(("tool", "option"), TOOLS.items())
def test_help(tool: str, option: str):
    done = run_tool(tool, "--help")
    assert done.returncode == 0, done.stderr[-3000:]
    stdout = done.stdout
    assert stdout.startswith(f"usage: {tool}.py")
    assert option in stdout


def test_average_checkpoints_writes_the_mean_of_the_last_two(run_dir: Path):
    stdout = run_ok("average_checkpoints", "--run-dir", run_dir, "--last", "2")
    output = run_dir / "averaged.keras"
    assert "averaged 2 checkpoints (epoch_001.weights.h5 .. epoch_002.weights.h5)" in stdout
    averaged = keras.models.load_model(output).get_weights()
    first, second = checkpoint_weights(run_dir, 1), checkpoint_weights(run_dir, 2)
    assert len(averaged) == len(first) == len(second)
    for weight, a, b in zip(averaged, first, second, strict=True):
        expected = ((a.astype(np.float64) + b.astype(np.float64)) / 2).astype(np.float32)
        np.testing.assert_allclose(weight, expected, rtol=1e-7, atol=1e-7)
    assert any(not np.allclose(w, b) for w, b in zip(averaged, second, strict=True))


def test_export_takes_the_next_version_writes_the_warmup_file_and_decodes_in_chunks(
    run_dir: Path, saved_model: Path, tmp_path: Path
):
    import tensorflow as tf

    from keras_attention.serving.export import load_exported
    from keras_attention.serving.warmup_requests import read_warmup_requests

    first_files = sorted(p.relative_to(saved_model) for p in saved_model.rglob("*"))
    (tmp_path / "warmup.txt").write_text("\n".join(["", *SENTENCES[:3], "  "]) + "\n")
    stdout = run_ok(
        "export", "--run-dir", run_dir, "--beam-size", "2", "--chunk-size", "1",
        "--warmup-file", tmp_path / "warmup.txt",
    )  # fmt: skip
    path = run_dir / "export" / "2"
    assert stdout == f"exported {path}\n"
    assert (path / "saved_model.pb").is_file()
    assert sorted(p.relative_to(saved_model) for p in saved_model.rglob("*")) == first_files
    requests = read_warmup_requests(path)
    batches = [[s.decode() for s in tf.make_ndarray(r.inputs["sentences"])] for r in requests]
    kept = [sentence for sentence in SENTENCES[:3] if sentence.strip()]  # blank lines skipped
    assert batches == [kept[:1], kept] * 5  # serving_default, greedy, n_best, sample, score
    # One sentence at a time or 64: the same translations.
    chunked = load_exported(path)(sentences=tf.constant(SENTENCES))
    whole = load_exported(saved_model)(sentences=tf.constant(SENTENCES))
    assert chunked["translations"].numpy().tolist() == whole["translations"].numpy().tolist()

    error = main_error("export", "--run-dir", run_dir, "--version", "1")
    assert f"{saved_model} exists" in error and "--overwrite" in error
    assert sorted(p.name for p in (run_dir / "export").iterdir()) == ["1", "2"]
    shutil.rmtree(path)


def test_translate_from_a_run_and_from_its_saved_model_agree(
    run_dir: Path, saved_model: Path, tmp_path: Path
):
    text = "".join(line + "\n" for line in SENTENCES)
    (tmp_path / "input.txt").write_text(text, encoding="utf-8")
    run_scores, run_texts = scored_lines(
        run_ok("translate", "--run-dir", run_dir, "--beam-size", "2", "--scores", stdin=text)
    )
    saved_scores, saved_texts = scored_lines(
        run_ok("translate", "--model", saved_model, "--scores", tmp_path / "input.txt")
    )
    assert len(run_texts) == len(SENTENCES)
    assert saved_texts == run_texts
    np.testing.assert_allclose(saved_scores, run_scores, atol=1e-3)
    assert run_texts[1] == "" and run_scores[1] == 0.0  # the empty line
    assert all(score < 0.0 for index, score in enumerate(run_scores) if index != 1)
    plain = run_ok("translate", "--model", saved_model, tmp_path / "input.txt")
    assert output_lines(plain) == saved_texts


def test_evaluate_a_run_on_its_own_whole_test_split(run_dir: Path, tmp_path: Path):
    # A copy of the run whose config.json names seed 7: the tool must score it on the test
    # split of seed 7 (that of the run), not on that of the default seed.
    copy = tmp_path / "run"
    copy.mkdir()
    for name in ("model.keras", "tokenizer.model"):
        shutil.copy(run_dir / name, copy / name)
    config = json.loads((run_dir / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "seed": 7}))
    hypotheses = tmp_path / "hypotheses.txt"
    stdout = run_ok("evaluate", "--run-dir", copy, "--beam-size", "2",
                    "--output", hypotheses)  # fmt: skip
    count = len(load_corpus("generated", seed=7, train_pairs=0)["test"][0])
    check_evaluation_output(stdout, hypotheses, count, seed=7)


def test_evaluate_a_saved_model_on_part_of_the_test_split(saved_model: Path, tmp_path: Path):
    hypotheses = tmp_path / "hypotheses.txt"
    stdout = run_ok("evaluate", "--model", saved_model, "--limit", "20",
                    "--output", hypotheses, "--json")  # fmt: skip
    check_evaluation_output(stdout, hypotheses, 20, seed=0, as_json=True)


@pytest.mark.parametrize(
    ("tool", "args", "needed"),
    [
        (
            "average_checkpoints",
            ["--run-dir", "{run}"],
            "config.json",
        ),  # rebuilds the model from it
        ("export", ["--run-dir", "{run}"], "model.keras"),
        ("translate", ["--run-dir", "{run}"], "model.keras"),
        ("evaluate", ["--run-dir", "{run}"], "model.keras"),
    ],
)
def test_a_missing_run_folder_is_named(tmp_path: Path, tool: str, args: list[str], needed: str):
    run = tmp_path / "no_such_run"
    error = main_error(tool, *(arg.format(run=run) for arg in args), stdin=b"A man.\n")
    assert str(run / needed) in error
