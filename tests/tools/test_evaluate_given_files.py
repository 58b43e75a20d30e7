"""`evaluate --source FILE --reference FILE`: a user's own files translated and scored with
sacreBLEU (cased, lowercased, Moses-tokenized BLEU and chrF), on a tiny generated corpus and a
run made without training (`make_tiny_run`); its errors are one line each."""

import json
import re
from pathlib import Path

import pytest
import sacrebleu

from keras_attention.data.generated_corpus import generate_pairs
from keras_attention.evaluation import score
from keras_attention_cli.commands import evaluate
from tests.run_helpers import main_error
from tests.runs.test_files import TinyRun
from tests.tools.test_tool_errors import run  # noqa: F401 (the finished tiny run)


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, Path]:
    """Five generated pairs as `given.en` and `given.de`."""
    pairs = generate_pairs(5, seed=11)
    source, reference = tmp_path / "given.en", tmp_path / "given.de"
    source.write_text("".join(en + "\n" for en, _ in pairs), encoding="utf-8")
    reference.write_text("".join(de + "\n" for _, de in pairs), encoding="utf-8")
    return source, reference


def test_given_files_are_translated_and_scored(run: TinyRun, corpus, tmp_path: Path, capsys):  # noqa: F811
    source, reference = corpus
    output = tmp_path / "hypotheses.txt"
    status = evaluate.main(["--run-dir", str(run.path), "--source", str(source),
                            "--reference", str(reference), "--output", str(output),
                            "--json"])  # fmt: skip
    assert status == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("model: ")
    assert lines[1] == f"{source} against {reference}: 5 sentences"
    assert re.fullmatch(r"BLEU \d+\.\d\d  \(.*case:mixed.*tok:13a.*\)", lines[2])
    assert re.fullmatch(r"chrF \d+\.\d\d  \(.*\)", lines[3])
    assert lines[5].startswith("BLEU (lowercased, Moses-tokenized) ")
    assert len(lines) == 7  # the scores as JSON (--json) after the readable lines
    values = json.loads(lines[-1])
    hypotheses = output.read_text(encoding="utf-8").split("\n")[:-1]
    references = reference.read_text(encoding="utf-8").split("\n")[:-1]
    assert len(hypotheses) == 5
    assert values["bleu"] == pytest.approx(
        sacrebleu.corpus_bleu(hypotheses, [references], tokenize="13a").score, abs=1e-9
    )
    assert values["chrf"] == pytest.approx(
        sacrebleu.corpus_chrf(hypotheses, [references]).score, abs=1e-9
    )
    # The Moses tokenizer's language is the reference's suffix, de.
    tokenized = score(hypotheses, references, "de").bleu_tokenized
    assert lines[5].startswith(f"BLEU (lowercased, Moses-tokenized) {tokenized:.2f}  ")


def test_given_files_of_unequal_length_are_one_error_line(run: TinyRun, corpus):  # noqa: F811
    source, reference = corpus
    reference.write_text("Ein Satz.\n", encoding="utf-8")
    error = main_error("evaluate", "--run-dir", run.path, "--source", source,
                       "--reference", reference)  # fmt: skip
    assert error == (
        f"error: --source {source} has 5 lines but --reference {reference} has 1: line i "
        "of one must translate line i of the other"
    )


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["--source", "{source}"], "error: --source and --reference go together: give both files"),
        (["--source", "{missing}", "--reference", "{reference}"], "error: input file {missing} "),
        (
            ["--source", "{source}", "--reference", "{reference}", "--dataset", "multi30k"],
            "error: --dataset: not with --source and --reference",
        ),
    ],
)
def test_given_files_errors_are_one_line(run: TinyRun, corpus, tmp_path, arguments, expected):  # noqa: F811
    names = {"source": corpus[0], "reference": corpus[1], "missing": tmp_path / "missing.en"}
    error = main_error(
        "evaluate", "--run-dir", run.path, *[arg.format(**names) for arg in arguments]
    )
    assert error.startswith(expected.format(**names))
