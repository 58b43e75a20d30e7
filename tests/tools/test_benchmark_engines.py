"""The decoding-engines benchmark: the keras-hub sampler driver searches as ours does, and the
engines section's structure and ratios are consistent (never its speeds)."""

import json
import re

import numpy as np
import pytest

from tests.conftest import to_numpy
from tests.shared_data import MULTI30K_DIR, needs_multi30k

pytest.importorskip("keras_hub")
pytest.importorskip("ctranslate2")

import keras_hub

from keras_attention.core.special_tokens import EOS_ID, PAD_ID
from keras_attention.decoding import greedy_search
from keras_attention.models import Transformer
from tools.benchmarks import decode, decode_throughput
from tools.benchmarks.keras_hub_search import keras_hub_sampler, sampler_search
from tools.benchmarks.timing import SMOKE_MODEL

ENGINES = {"ours", "ours_int8", "ctranslate2_float32", "ctranslate2_int8", "keras_hub"}


def sources_of_different_lengths(vocabulary_size: int) -> np.ndarray:
    """Four sources of 8, 6, 3 and 1 tokens, EOS included, padded with 0."""
    rng = np.random.default_rng(0)
    source = np.zeros((4, 8), "int32")
    for row, length in enumerate((8, 6, 3, 1)):
        source[row, : length - 1] = rng.integers(4, vocabulary_size, length - 1)
        source[row, length - 1] = EOS_ID
    return source


def test_keras_hub_samplers_over_our_step_match_greedy_search():
    model = Transformer.from_preset("tiny", vocabulary_size=300, **{**SMOKE_MODEL, "dropout": 0.0})
    model.build()
    source = sources_of_different_lengths(300)
    # A random model never chooses EOS: make EOS a little likelier than the token it chooses
    # most, so that some sentences end on their own and the others go on past them.
    tokens = to_numpy(greedy_search(model, source, extra_length=4)[0])
    favourite = np.bincount(tokens[tokens > EOS_ID]).argmax()
    embeddings = model.target_embedding.token_embedding.embeddings
    table = to_numpy(embeddings)
    table[EOS_ID] = 1.05 * table[favourite]
    embeddings.assign(table)

    for extra_length in (0, 4):
        ours = to_numpy(greedy_search(model, source, extra_length=extra_length)[0])
        limits = np.sum(source != PAD_ID, axis=1) + extra_length
        ends = np.argmax(ours == EOS_ID, axis=1) + 1  # tokens generated, EOS included
        assert np.all(np.any(ours == EOS_ID, axis=1)) and np.all(ends <= limits)
        if extra_length:
            assert np.any(ends < limits)  # some ended on their own, not at their limit
        # A one-beam BeamSampler is greedy search too (its beams and cache reordering run).
        for sampler in (keras_hub_sampler(1), keras_hub.samplers.BeamSampler(num_beams=1)):
            theirs = to_numpy(sampler_search(model, source, sampler, extra_length))
            np.testing.assert_array_equal(theirs, ours)


def test_keras_hub_beam_sampler_output_layout():
    model = Transformer.from_preset("tiny", vocabulary_size=300, **{**SMOKE_MODEL, "dropout": 0.0})
    model.build()
    source = sources_of_different_lengths(300)
    tokens = to_numpy(sampler_search(model, source, keras_hub_sampler(4), extra_length=2))
    limits = np.sum(source != PAD_ID, axis=1) + 2
    assert tokens.shape == (4, limits.max())
    for row, limit in zip(tokens, limits, strict=True):
        end = list(row).index(EOS_ID)  # ends with EOS within its limit, then only padding
        assert end < limit and np.all(row[end + 1 :] == PAD_ID)
        assert np.all(row[:end] > EOS_ID)


@needs_multi30k
def test_engines_benchmark_smoke(tmp_path):
    config = decode_throughput.quick_config(
        sentences=4,
        batch_size=2,
        engines_only=True,
        data_dir=str(MULTI30K_DIR),
        cache_dir=str(tmp_path),
    )
    result = decode.run_decode_benchmark(config)
    assert "sentences_per_second" not in result  # only the engines section
    assert result["config"]["alpha"] == 0.6 and result["config"]["extra_length"] == 0
    section = result["engines"]
    assert section["settings"]["sentences"] == 4 and section["settings"]["batches"] == 2
    assert section["settings"]["bleu_meaningful"] is False
    engines = section["engines"]
    assert set(engines) == ENGINES
    for rows in engines.values():
        assert set(rows) == {"greedy", "beam4"}
        for row in rows.values():
            assert row["sentences_per_second"] == pytest.approx(4 / row["best_s"])
            assert 0 < row["best_s"] <= row["median_s"]
            assert 0 <= row["bleu"] <= 100 and row["mean_output_tokens"] > 0
    # A random model never ends early: with extra_length 0, our searches and keras-hub's
    # decode every sentence to its source's length.
    lengths = {engines[e][s]["mean_output_tokens"] for e in ("ours", "keras_hub") for s in rows}
    assert len(lengths) == 1
    for name, ours in (("ctranslate2_float32", "ours"), ("ctranslate2_int8", "ours_int8")):
        beam = engines[name]["beam4"]
        tried = {float(p): bleu for p, bleu in beam["bleu_by_length_penalty"].items()}
        assert set(tried) == {0.0, 1.0}
        target = engines[ours]["beam4"]["bleu"]
        assert abs(tried[beam["length_penalty"]] - target) == min(
            abs(bleu - target) for bleu in tried.values()
        )

    ratios = section["ratios"]
    assert [(r["search"], r["numerator"], r["denominator"]) for r in ratios] == [
        (search, numerator, denominator)
        for search in ("greedy", "beam4")
        for numerator, denominator in (
            ("ours", "ctranslate2_float32"),
            ("ours_int8", "ctranslate2_int8"),
            ("ours", "keras_hub"),
        )
    ]
    for ratio in ratios:
        top = engines[ratio["numerator"]][ratio["search"]]
        bottom = engines[ratio["denominator"]][ratio["search"]]
        assert ratio["ratio"] == pytest.approx(
            top["sentences_per_second"] / bottom["sentences_per_second"]
        )
        assert ratio["bleu_difference"] == pytest.approx(top["bleu"] - bottom["bleu"])
        if ratio["search"] == "greedy":
            assert ratio["goal"] is None and ratio["met"] is None
        else:
            assert ratio["met"] == (ratio["ratio"] >= ratio["goal"])
    assert [r["goal"] for r in ratios[3:]] == [1.0, 1.0, 2.0]
    json.dumps(result)  # `--json` writes it

    table = decode.format_decode_table(result)
    for engine in ENGINES:
        assert table.count(f"\n{engine} ") == 2
    printed = re.findall(r"([\d.]+) / ([\d.]+) = ([\d.]+)x", table)
    assert len(printed) == len(ratios)
    for top, bottom, ratio in printed:  # each printed to 0.05 sent/s, the ratio to 0.005
        top, bottom, ratio = float(top), float(bottom), float(ratio)
        assert (top - 0.05) / (bottom + 0.05) - 0.005 <= ratio
        assert ratio <= (top + 0.05) / (bottom - 0.05) + 0.005
