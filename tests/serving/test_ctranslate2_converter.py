"""The CTranslate2 converter: CTranslate2 runs a converted model as we do, weight for weight.

Tiny models (d_model 16, two layers, a vocabulary of 120 pieces learned on the generated
corpus) with random weights, converted and run by `ctranslate2.Translator` on one CPU thread:

- the log-probabilities of forced targets (`score_batch`) equal ours to 1e-4, for post-LN,
  pre-LN and unshared, untied embeddings: every weight, the positional table, the layer
  norms' epsilon and the source's `</s>` are where CTranslate2 reads them;
- greedy and beam search (length penalty off) find the same translations, token for token;
- int8 weights convert and translate; the command-line tool converts a run folder and
  reports its user errors on one line.

Random embeddings tied to the output make a model repeat its input token whatever the
source, which would make a weak test of the searches; those tests use an untied output
matrix (outputs then depend on the source and the position) whose `</s>` column is favoured
through the final layer norm's bias, so that some translations end with `</s>` and others
run to the length limit.
"""

import json
import os
import re
import types
from pathlib import Path

import keras
import numpy as np
import pytest

ctranslate2 = pytest.importorskip("ctranslate2")

from keras_attention.core.special_tokens import BOS_ID, EOS_ID, PAD_ID  # noqa: E402
from keras_attention.data.generated_corpus import generated_splits  # noqa: E402
from keras_attention.data.tokenizer import SubwordTokenizer  # noqa: E402
from keras_attention.decoding import beam_search, greedy_search  # noqa: E402
from keras_attention.models import Transformer  # noqa: E402
from keras_attention.serving.ctranslate2_converter import (  # noqa: E402
    SUPPRESSED_SEQUENCES,
    check_ctranslate2_output_dir,
    convert_to_ctranslate2,
    detokenize,
    source_tokens,
    vocabulary,
)
from tests.runs.test_files import load_tool  # noqa: E402
from tests.tolerances import assert_clear_winner  # noqa: E402

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="the tokenizer and run folders need TF"
)

VOCABULARY_SIZE = 120
TINY_MODEL = {
    "num_encoder_layers": 2,
    "num_decoder_layers": 2,
    "d_model": 16,
    "num_heads": 2,
    "intermediate_dim": 32,
    "dropout": 0.0,
}
# How much the final layer norm's bias favours `</s>` in the search tests' models.
EOS_BIAS = 2.0
GREEDY_MAX_LENGTH = 12  # ours: up to 11 tokens, then `</s>` forced
BEAM_MAX_LENGTH = 30
BEAM_SIZE = 3
NUM_SENTENCES = 24
LOG_PROB_TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def corpus() -> dict:
    return generated_splits(num_train=1000, num_val=4, num_test=NUM_SENTENCES)


@pytest.fixture(scope="module")
def tokenizer(corpus: dict) -> SubwordTokenizer:
    texts = [text for pair in corpus["train"] for text in pair]
    return SubwordTokenizer.train(texts, vocabulary_size=VOCABULARY_SIZE)


@pytest.fixture(scope="module")
def sources(corpus: dict) -> list[str]:
    return [source for source, _ in corpus["test"]]


@pytest.fixture(scope="module")
def targets(corpus: dict) -> list[str]:
    return [target for _, target in corpus["test"]]


def tiny_model(tokenizer: SubwordTokenizer, seed: int = 7, **overrides) -> Transformer:
    keras.utils.set_random_seed(seed)
    model = Transformer(tokenizer.vocabulary_size, **{**TINY_MODEL, **overrides})
    model.build()
    return model


def favour_eos(model: Transformer, bias: float) -> Transformer:
    """Adds `bias` times the unit `</s>` output vector to the final layer norm's bias."""
    token_embedding = model.target_embedding.token_embedding
    if token_embedding.tie_weights:
        output = keras.ops.convert_to_numpy(token_embedding.embeddings)  # (V, D)
    else:
        output = keras.ops.convert_to_numpy(token_embedding.reverse_embeddings).T  # (V, D)
    direction = output[EOS_ID] / np.linalg.norm(output[EOS_ID])
    decoder = model.decoder
    norm = decoder.final_norm if model.norm_first else decoder.blocks[-1].feed_forward_norm
    norm.beta.assign(keras.ops.convert_to_numpy(norm.beta) + bias * direction)
    return model


def load_translator(path: Path):
    return ctranslate2.Translator(str(path), device="cpu", inter_threads=1, intra_threads=1)


def padded(rows: list[list[int]]) -> np.ndarray:
    """Id lists as an int32 matrix padded with 0."""
    matrix = np.full((len(rows), max(map(len, rows))), PAD_ID, "int32")
    for index, row in enumerate(rows):
        matrix[index, : len(row)] = row
    return matrix


def source_ids(tokenizer: SubwordTokenizer, sentences: list[str]) -> np.ndarray:
    """Our model's input: the ids of each sentence, then EOS, padded."""
    return padded([[*row, EOS_ID] for row in tokenizer.tokenize(sentences).to_list()])


def as_pieces(tokenizer: SubwordTokenizer, tokens) -> list[list[str]]:
    """Our searches' output (ids, ending with EOS, then padding) as pieces before EOS."""
    pieces = vocabulary(tokenizer)
    rows = keras.ops.convert_to_numpy(tokens).tolist()
    return [[pieces[index] for index in row[: row.index(EOS_ID)]] for row in rows]


@pytest.fixture(scope="module", params=[False, True], ids=["post_ln", "pre_ln"])
def searcher(request, tokenizer: SubwordTokenizer, tmp_path_factory) -> types.SimpleNamespace:
    """A model for the search tests (see the module's docstring) and its conversion."""
    model = tiny_model(tokenizer, norm_first=request.param, tie_output_embeddings=False)
    favour_eos(model, EOS_BIAS)
    path = convert_to_ctranslate2(model, tokenizer, tmp_path_factory.mktemp("ct2") / "model")
    return types.SimpleNamespace(model=model, translator=load_translator(path))


# The files and the weights.


def test_the_model_folder_holds_the_vocabulary_and_the_special_tokens(tokenizer, tmp_path):
    path = convert_to_ctranslate2(tiny_model(tokenizer), tokenizer, tmp_path / "model")
    assert sorted(p.name for p in path.iterdir()) == [
        "config.json",
        "model.bin",
        "shared_vocabulary.json",
    ]
    pieces = json.loads((path / "shared_vocabulary.json").read_text(encoding="utf-8"))
    assert len(pieces) == VOCABULARY_SIZE
    assert pieces[:4] == ["<pad>", "<unk>", "<s>", "</s>"]
    config = json.loads((path / "config.json").read_text())
    assert config["bos_token"] == config["decoder_start_token"] == pieces[BOS_ID]
    assert config["eos_token"] == pieces[EOS_ID] and config["add_source_eos"] is True
    assert config["layer_norm_epsilon"] == pytest.approx(1e-6)


@pytest.mark.parametrize(
    "overrides",
    [
        {"norm_first": False},
        {"norm_first": True},
        {"norm_first": True, "share_embeddings": False, "tie_output_embeddings": False},
    ],
    ids=["post_ln", "pre_ln", "pre_ln_unshared_untied"],
)
def test_forced_target_log_probabilities_equal_ours(
    tokenizer, sources, targets, tmp_path, overrides: dict
):
    model = tiny_model(tokenizer, seed=11, **overrides)
    translator = load_translator(convert_to_ctranslate2(model, tokenizer, tmp_path / "model"))
    target_rows = tokenizer.tokenize(targets).to_list()
    logits = model((source_ids(tokenizer, sources), padded([[BOS_ID, *r] for r in target_rows])))
    log_probs = keras.ops.convert_to_numpy(keras.ops.log_softmax(logits, axis=-1))

    results = translator.score_batch(
        source_tokens(tokenizer, sources), source_tokens(tokenizer, targets)
    )

    assert len(results) == len(sources)
    for row, (result, target) in enumerate(zip(results, target_rows, strict=True)):
        expected = [log_probs[row, step, token] for step, token in enumerate([*target, EOS_ID])]
        assert len(result.log_probs) == len(target) + 1  # the target's tokens and `</s>`
        np.testing.assert_allclose(result.log_probs, expected, atol=LOG_PROB_TOLERANCE)


def test_the_positional_table_matters(tokenizer, sources, targets, tmp_path):
    """A check of the check above: with CTranslate2's own sinusoidal table (sines and
    cosines in halves) instead of ours, the log-probabilities differ."""
    from ctranslate2.specs.model_spec import OPTIONAL

    from keras_attention.serving.ctranslate2_converter import ctranslate2_spec

    model = tiny_model(tokenizer, seed=11)
    spec = ctranslate2_spec(model, tokenizer)
    spec.encoder.position_encodings.encodings = OPTIONAL  # CTranslate2 computes its own
    spec.decoder.position_encodings.encodings = OPTIONAL
    (tmp_path / "model").mkdir()
    spec.save(str(tmp_path / "model"))
    ours = load_translator(convert_to_ctranslate2(model, tokenizer, tmp_path / "ours"))
    theirs = load_translator(tmp_path / "model")
    source, target = source_tokens(tokenizer, sources[:4]), source_tokens(tokenizer, targets[:4])
    ours_log_probs = np.concatenate([r.log_probs for r in ours.score_batch(source, target)])
    their_log_probs = np.concatenate([r.log_probs for r in theirs.score_batch(source, target)])
    assert np.abs(ours_log_probs - their_log_probs).max() > 100 * LOG_PROB_TOLERANCE


# The searches.


def assert_clear_greedy_steps(model: Transformer, source: np.ndarray, tokens: np.ndarray):
    """Each greedy step's best token (`<pad>` and `<s>` aside) is clearly ahead of the next
    (`assert_clear_winner`), so that the two engines' rounding cannot flip it."""
    target_in = np.concatenate([np.full((len(tokens), 1), BOS_ID), tokens[:, :-1]], axis=1)
    log_probs = keras.ops.convert_to_numpy(
        keras.ops.log_softmax(model((source, target_in.astype("int32"))), axis=-1)
    )
    log_probs[..., [PAD_ID, BOS_ID]] = -np.inf
    for row, ids in enumerate(tokens.tolist()):
        steps = min(ids.index(EOS_ID) + 1, GREEDY_MAX_LENGTH - 1)  # the last EOS is forced
        assert_clear_winner(log_probs[row, :steps], what=f"sentence {row}'s greedy steps")


def test_greedy_translations_equal_ours(searcher, tokenizer, sources):
    """Ours stops at `</s>` or forces it as the `GREEDY_MAX_LENGTH`-th token; CTranslate2
    stops at `</s>` or after `GREEDY_MAX_LENGTH - 1` tokens: the same tokens before `</s>`.
    `<pad>` and `<s>`, which we never generate, are suppressed (which changes no argmax)."""
    source = source_ids(tokenizer, sources)
    tokens, _ = greedy_search(searcher.model, source, GREEDY_MAX_LENGTH)
    assert_clear_greedy_steps(searcher.model, source, keras.ops.convert_to_numpy(tokens))
    results = searcher.translator.translate_batch(
        source_tokens(tokenizer, sources),
        beam_size=1,
        max_decoding_length=GREEDY_MAX_LENGTH - 1,
        min_decoding_length=0,
        suppress_sequences=SUPPRESSED_SEQUENCES,
    )
    theirs = [result.hypotheses[0] for result in results]
    ours = as_pieces(tokenizer, tokens)
    assert theirs == ours
    assert len({tuple(pieces) for pieces in ours}) >= 3  # the source matters
    lengths = {len(pieces) for pieces in ours}
    assert GREEDY_MAX_LENGTH - 1 in lengths and min(lengths) < GREEDY_MAX_LENGTH - 1


def test_beam_search_without_length_penalty_finds_our_translations(searcher, tokenizer, sources):
    """Beam search, alpha 0 (ours) and length_penalty 0 (CTranslate2): the same best
    translation and score for every sentence whose search ends with `</s>` before the limit.

    Both engines rank the `2 * beam_size` best continuations, finish a hypothesis with an
    `</s>` among the first `beam_size` and refill the beam from the rest. They part only at
    the length limit: at its last step ours allows only `</s>` (the score counts its
    log-probability), where CTranslate2 ends its hypotheses with whichever tokens are best.
    So a sentence whose best hypothesis reaches the limit gets another translation; the test
    shows that this is the only difference (there, CTranslate2's has one more token), and
    that most sentences end before the limit. They also stop differently: CTranslate2 (with
    no penalty) once its best live hypothesis ends, which no later one can beat since scores
    only fall as hypotheses grow; ours once `beam_size` hypotheses have ended, which can come
    before a better one ends. Where ours stops first they could part; on these sentences
    they never do.
    """
    source = source_ids(tokenizer, sources)
    tokens, scores = beam_search(
        searcher.model, source, BEAM_SIZE, alpha=0.0, max_length=BEAM_MAX_LENGTH
    )
    results = searcher.translator.translate_batch(
        source_tokens(tokenizer, sources),
        beam_size=BEAM_SIZE,
        length_penalty=0,
        max_decoding_length=BEAM_MAX_LENGTH,
        min_decoding_length=0,
        return_scores=True,
    )
    ours, scores = as_pieces(tokenizer, tokens), keras.ops.convert_to_numpy(scores)
    ended = [len(pieces) < BEAM_MAX_LENGTH - 1 for pieces in ours]
    assert sum(ended) >= 0.6 * len(ours), [len(pieces) for pieces in ours]
    for pieces, score, result, natural_end in zip(ours, scores, results, ended, strict=True):
        if natural_end:
            assert result.hypotheses[0] == pieces
            assert result.scores[0] == pytest.approx(score, abs=LOG_PROB_TOLERANCE)
        else:
            assert len(result.hypotheses[0]) == BEAM_MAX_LENGTH
    print(f"beam search: {sum(ended)} of {len(ours)} sentences ended before the limit")


def test_int8_weights_convert_and_translate(tokenizer, sources, tmp_path):
    model = tiny_model(tokenizer)
    float_path = convert_to_ctranslate2(model, tokenizer, tmp_path / "float32")
    int8_path = convert_to_ctranslate2(model, tokenizer, tmp_path / "int8", quantization="int8")
    assert (int8_path / "model.bin").stat().st_size < (float_path / "model.bin").stat().st_size

    translator = load_translator(int8_path)
    results = translator.translate_batch(
        source_tokens(tokenizer, sources[:5]), beam_size=2, max_decoding_length=6
    )
    assert len(results) == 5
    for result in results:
        assert 1 <= len(result.hypotheses[0]) <= 6
        assert all(isinstance(piece, str) for piece in result.hypotheses[0])
    texts = detokenize(tokenizer, [result.hypotheses[0] for result in results])
    assert len(texts) == 5 and all(isinstance(text, str) for text in texts)


def test_detokenize_inverts_source_tokens(tokenizer, sources):
    assert detokenize(tokenizer, source_tokens(tokenizer, sources[:3])) == sources[:3]


# What cannot be converted, and the output folder.


@pytest.mark.parametrize(
    ("overrides", "setting"),
    [
        ({"share_embeddings": False, "target_vocabulary_size": 90}, "target_vocabulary_size"),
        ({"vocabulary_size": 90}, "vocabulary_size"),
        # The paper's variations that CTranslate2's TransformerSpec cannot hold.
        ({"key_dim": 3}, "key_dim=3"),
        ({"attention_scale": 1.0}, "attention_scale=1.0"),
        ({"scale_embeddings": False}, "scale_embeddings=False"),
        ({"max_positions": 64}, "max_positions=64"),
    ],
)
def test_models_the_spec_cannot_hold_are_refused(tokenizer, tmp_path, overrides, setting):
    keras.utils.set_random_seed(7)
    model = Transformer(**{"vocabulary_size": VOCABULARY_SIZE, **TINY_MODEL, **overrides})
    model.build()
    with pytest.raises(ValueError, match=setting):
        convert_to_ctranslate2(model, tokenizer, tmp_path / "model")
    assert not (tmp_path / "model").exists()


def test_an_unknown_quantization_is_refused_before_any_work(tokenizer, tmp_path):
    with pytest.raises(ValueError, match=r"quantization.*int3"):
        convert_to_ctranslate2(tiny_model(tokenizer), tokenizer, tmp_path / "m", "int3")
    assert list(tmp_path.iterdir()) == []


def test_a_keras_quantized_model_is_refused(tokenizer, tmp_path):
    model = tiny_model(tokenizer)
    model.quantize("int8")
    with pytest.raises(ValueError, match=r"quantized.*quantization='int8'.*token_embedding"):
        convert_to_ctranslate2(model, tokenizer, tmp_path / "model")
    assert not (tmp_path / "model").exists()


def folder_contents(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def test_a_failed_conversion_leaves_nothing(tokenizer, tmp_path, monkeypatch):
    def fail_half_way(spec, output_dir: str) -> None:
        Path(output_dir, "model.bin").write_bytes(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(ctranslate2.specs.TransformerSpec, "save", fail_half_way)
    with pytest.raises(OSError, match="disk full"):
        convert_to_ctranslate2(tiny_model(tokenizer), tokenizer, tmp_path / "model")
    assert list(tmp_path.iterdir()) == []


def test_an_existing_model_is_replaced_only_with_overwrite(tokenizer, tmp_path):
    path = convert_to_ctranslate2(tiny_model(tokenizer), tokenizer, tmp_path / "model")
    before = folder_contents(path)
    other = tiny_model(tokenizer, seed=8)
    with pytest.raises(FileExistsError, match=rf"{re.escape(str(path))}.*not empty.*overwrite"):
        convert_to_ctranslate2(other, tokenizer, path)
    assert folder_contents(path) == before

    convert_to_ctranslate2(other, tokenizer, path, overwrite=True)
    assert folder_contents(path)["model.bin"] != before["model.bin"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no staging folder left


def test_an_empty_folder_is_written_and_other_folders_are_never_replaced(tokenizer, tmp_path):
    (tmp_path / "empty").mkdir()
    check_ctranslate2_output_dir(tmp_path / "empty", overwrite=False)
    convert_to_ctranslate2(tiny_model(tokenizer), tokenizer, tmp_path / "empty")
    assert (tmp_path / "empty" / "model.bin").is_file()

    (tmp_path / "a_file").write_text("")
    with pytest.raises(FileExistsError, match="is a file"):
        convert_to_ctranslate2(tiny_model(tokenizer), tokenizer, tmp_path / "a_file")

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "model.keras").write_bytes(b"precious")
    with pytest.raises(FileExistsError, match="holds no CTranslate2 model"):
        convert_to_ctranslate2(tiny_model(tokenizer), tokenizer, tmp_path / "run", overwrite=True)
    assert folder_contents(tmp_path / "run") == {"model.keras": b"precious"}


# The command-line tool.


@pytest.fixture(scope="module")
def run_dir(tokenizer, tmp_path_factory) -> Path:
    """A finished run folder: `model.keras` and `tokenizer.model`."""
    path = tmp_path_factory.mktemp("run")
    tiny_model(tokenizer).save(path / "model.keras")
    tokenizer.save(path / "tokenizer.model")
    return path


def cli_error(capsys, *args: str | Path) -> str:
    """Runs the tool, which must fail with one line, `error: ...`, and status 2."""
    with pytest.raises(SystemExit) as exit_info:
        load_tool("convert_ctranslate2").main([str(arg) for arg in args])
    captured = capsys.readouterr()
    assert exit_info.value.code == 2
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    return lines[0]


def test_the_tool_converts_a_run_folder(run_dir, tokenizer, sources, tmp_path, capsys):
    output = tmp_path / "ct2"
    load_tool("convert_ctranslate2").main(["--run-dir", str(run_dir), "--output", str(output)])
    assert capsys.readouterr().out == f"converted {output}\n"
    results = load_translator(output).translate_batch(
        source_tokens(tokenizer, sources[:2]), max_decoding_length=4
    )
    assert len(results) == 2 and all(1 <= len(r.hypotheses[0]) <= 4 for r in results)
    float32_size = (output / "model.bin").stat().st_size

    load_tool("convert_ctranslate2").main(
        [
            "--run-dir",
            str(run_dir),
            "--output",
            str(output),
            "--quantization",
            "int8",
            "--overwrite",
        ]
    )
    assert capsys.readouterr().out == f"converted {output}\n"
    assert (output / "model.bin").stat().st_size < float32_size


def test_the_tool_reports_a_missing_run_folder(tmp_path, capsys):
    missing = tmp_path / "no_such_run"
    error = cli_error(capsys, "--run-dir", missing, "--output", tmp_path / "ct2")
    assert str(missing) in error and "does not exist" in error
    assert not (tmp_path / "ct2").exists()


def test_the_tool_refuses_an_existing_output_without_overwrite(run_dir, tmp_path, capsys):
    output = tmp_path / "ct2"
    load_tool("convert_ctranslate2").main(["--run-dir", str(run_dir), "--output", str(output)])
    capsys.readouterr()
    before = folder_contents(output)
    error = cli_error(capsys, "--run-dir", run_dir, "--output", output, "--quantization", "int8")
    assert str(output) in error and "--overwrite" in error
    assert folder_contents(output) == before


def test_the_tool_reports_an_unknown_quantization(run_dir, tmp_path, capsys):
    error = cli_error(
        capsys, "--run-dir", run_dir, "--output", tmp_path / "ct2", "--quantization", "int3"
    )
    assert "quantization" in error and "int3" in error
    assert not (tmp_path / "ct2").exists()


def test_the_tool_reports_a_corrupt_model(run_dir, tmp_path, capsys):
    broken = tmp_path / "run"
    broken.mkdir()
    (broken / "tokenizer.model").write_bytes((run_dir / "tokenizer.model").read_bytes())
    (broken / "model.keras").write_bytes((run_dir / "model.keras").read_bytes()[:100])
    error = cli_error(capsys, "--run-dir", broken, "--output", tmp_path / "ct2")
    assert str(broken / "model.keras") in error and "corrupt" in error
    assert not (tmp_path / "ct2").exists()
    assert os.listdir(tmp_path) == ["run"]
