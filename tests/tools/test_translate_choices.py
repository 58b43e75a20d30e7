"""`translate`'s decoding choices end to end, in this process: the n-best list's format and
order, seeded sampling, scoring given translations, an ensemble of runs, alignments, the
same options on a SavedModel, and one-line errors for what cannot be done."""

import re
import shutil
from pathlib import Path

import pytest

from keras_attention_cli.commands import translate
from tests.runs.test_files import TinyRun
from tests.tools.test_tool_errors import run  # noqa: F401 (the finished tiny run)

SENTENCES = ["the dog sleeps in the park", "a cat runs", ""]


@pytest.fixture
def inputs(tmp_path: Path) -> str:
    path = tmp_path / "input.txt"
    path.write_text("".join(s + "\n" for s in SENTENCES), encoding="utf-8")
    return str(path)


def output(capsys, argv: list[str]) -> list[str]:
    assert translate.main(argv) == 0
    return capsys.readouterr().out.split("\n")[:-1]


def error(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        translate.main(argv)
    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_the_n_best_list_has_k_lines_a_sentence_best_first(run: TinyRun, inputs: str, capsys):  # noqa: F811
    plain = output(capsys, ["--run-dir", str(run.path), inputs])  # the run's beam, 4
    lines = output(capsys, ["--run-dir", str(run.path), "--n-best", "3", inputs])
    assert len(lines) == 3 * len(SENTENCES)
    rows = [line.split("\t") for line in lines]
    assert all(len(row) == 3 for row in rows)
    assert [int(row[0]) for row in rows] == [i for i in range(len(SENTENCES)) for _ in range(3)]
    for i in range(len(SENTENCES)):
        scores = [float(row[1]) for row in rows[3 * i : 3 * i + 3]]
        assert scores == sorted(scores, reverse=True)
        assert rows[3 * i][2] == plain[i]  # the best is the translation
    # The run's beam (4) widens to a longer list; a given narrower beam is refused.
    assert len(output(capsys, ["--run-dir", str(run.path), "--n-best", "6", inputs])) == 18
    message = error(
        capsys, ["--run-dir", str(run.path), "--n-best", "6", "--beam-size", "2", inputs]
    )
    assert message.startswith("error: --n-best 6: at most the beam size (2)")


def test_sampling_is_seeded(run: TinyRun, inputs: str, capsys):  # noqa: F811
    argv = ["--run-dir", str(run.path), "--sample", inputs]
    first = output(capsys, [*argv, "--seed", "4"])
    assert output(capsys, [*argv, "--seed", "4"]) == first
    assert output(capsys, [*argv, "--seed", "5"]) != first
    assert len(first) == len(SENTENCES) and first[2] == ""
    samples = output(capsys, [*argv, "--seed", "4", "--n-best", "3", "--top-p", "0.9"])
    assert len(samples) == 9 and all(len(line.split("\t")) == 3 for line in samples)
    message = error(capsys, ["--run-dir", str(run.path), "--top-k", "5", inputs])
    assert message == "error: --top-k: only with --sample"


def test_scores_of_given_translations(run: TinyRun, inputs: str, tmp_path: Path, capsys):  # noqa: F811
    targets = tmp_path / "targets.txt"
    targets.write_text("der Hund schläft\neine Katze\n\n", encoding="utf-8")
    lines = output(
        capsys, ["--run-dir", str(run.path), "--score", "--target", str(targets), inputs]
    )
    assert len(lines) == 3
    for line in lines:
        score, log_prob = (float(value) for value in line.split("\t"))
        assert log_prob < 0 and score < 0
    targets.write_text("only one\n", encoding="utf-8")
    message = error(
        capsys, ["--run-dir", str(run.path), "--score", "--target", str(targets), inputs]
    )
    assert (
        message
        == f"error: --target {targets} has 1 lines but the input has more: they must be aligned"
    )


def test_an_ensemble_of_a_run_with_itself_translates_as_the_run(
    run: TinyRun,  # noqa: F811
    inputs: str,
    tmp_path: Path,
    capsys,
):
    plain = output(capsys, ["--run-dir", str(run.path), "--scores", inputs])
    twice = output(
        capsys, ["--run-dir", str(run.path), "--run-dir", str(run.path), "--scores", inputs]
    )
    assert [line.split("\t")[1] for line in twice] == [line.split("\t")[1] for line in plain]
    for mine, theirs in zip(plain, twice, strict=True):
        assert float(mine.split("\t")[0]) == pytest.approx(float(theirs.split("\t")[0]), abs=1e-3)
    other = Path(shutil.copytree(run.path, tmp_path / "other"))
    (other / "tokenizer.model").write_bytes((other / "tokenizer.model").read_bytes() + b"\x00")
    message = error(capsys, ["--run-dir", str(run.path), "--run-dir", str(other), inputs])
    assert message.startswith(f"error: --run-dir {other}: its tokenizer file")


def test_alignments_follow_each_translation(run: TinyRun, inputs: str, capsys):  # noqa: F811
    lines = output(capsys, ["--run-dir", str(run.path), "--alignments", inputs])
    assert len(lines) == len(SENTENCES)
    for sentence, line in zip(SENTENCES, lines, strict=True):
        text, alignment = line.split("\t")
        if sentence and text:
            assert re.fullmatch(r"\d+-\d+( \d+-\d+)*", alignment), alignment
            assert all(int(p.split("-")[0]) < len(sentence.split()) for p in alignment.split())


def test_a_savedmodel_gives_n_best_lists_and_refuses_alignments(
    tiny_saved_model: Path, inputs: str, capsys
):
    lines = output(capsys, ["--model", str(tiny_saved_model), "--n-best", "2", inputs])
    assert len(lines) == 6
    message = error(capsys, ["--model", str(tiny_saved_model), "--alignments", inputs])
    assert message.startswith("error: --alignments: needs the model's attention")
    message = error(capsys, ["--model", str(tiny_saved_model), "--n-best", "3", inputs])
    assert message.startswith("error: --n-best 3: at most the beam size (2)")


def test_an_ensemble_exports_as_one_savedmodel(run: TinyRun, inputs: str, tmp_path: Path, capsys):  # noqa: F811
    from keras_attention_cli.commands import export

    argv = ["--run-dir", str(run.path), "--ensemble-with", str(run.path)]
    assert export.main([*argv, "--output", str(tmp_path / "ensemble")]) == 0
    capsys.readouterr()
    served = output(capsys, ["--model", str(tmp_path / "ensemble" / "1"), inputs])
    assert served == output(capsys, ["--run-dir", str(run.path), inputs])
    other = Path(shutil.copytree(run.path, tmp_path / "other"))
    (other / "tokenizer.model").write_bytes(b"not the same")
    with pytest.raises(SystemExit):
        export.main(["--run-dir", str(run.path), "--ensemble-with", str(other)])
    assert capsys.readouterr().err.startswith(f"error: --ensemble-with {other}: its tokenizer")
