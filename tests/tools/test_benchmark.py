"""Smoke test of the training-throughput benchmark (structure and consistency, never speed)."""

import dataclasses
import re

import pytest

from tests.shared_data import MULTI30K_DIR, needs_multi30k

pytest.importorskip("keras_hub")

from tools.benchmarks import decode, decode_throughput, serve_throughput, train_throughput
from tools.benchmarks.timing import TransformerDims, forward_flops


@pytest.fixture(scope="module")
def tokenizer_cache(tmp_path_factory) -> str:
    """One tokenizer cache for the module's benchmarks: they all learn the same SentencePiece
    model (Multi30k train, 500 pieces), so only the first pays for learning it."""
    return str(tmp_path_factory.mktemp("tokenizer_cache"))


def test_forward_flops_counts_each_matmul():
    dims = TransformerDims(
        num_encoder_layers=1,
        num_decoder_layers=1,
        d_model=4,
        intermediate_dim=8,
        vocabulary_size=10,
    )
    b, s, t, d, f, v = 2, 3, 5, 4, 8, 10
    encoder = 4 * (2 * b * s * d * d) + 2 * (2 * b * s * s * d) + 2 * (2 * b * s * d * f)
    self_attention = 4 * (2 * b * t * d * d) + 2 * (2 * b * t * t * d)
    cross_attention = 2 * (2 * b * t * d * d) + 2 * (2 * b * s * d * d) + 2 * (2 * b * t * s * d)
    decoder = self_attention + cross_attention + 2 * (2 * b * t * d * f)
    assert forward_flops(dims, b, s, t) == encoder + decoder + 2 * b * t * d * v


@needs_multi30k
def test_train_benchmark_smoke(tokenizer_cache: str):
    config = train_throughput.quick_config(
        pairs=200,
        steps=2,
        rounds=2,
        max_tokens=512,
        max_length=32,
        length_multiple=32,  # one bucket shape: one trace per model
        peer_batch_size=8,
        jit_modes=(False,),  # no XLA compilation: the test stays fast
        vocabulary_size=500,
        data_dir=str(MULTI30K_DIR),
        cache_dir=tokenizer_cache,
        matmul_size=512,
    )
    result = train_throughput.run_train_benchmark(config)

    assert set(result["runs"]) == {
        "ours/bucketed/no-jit",
        "peer/bucketed/no-jit",
        "peer/fixed/no-jit",
    }
    assert result["matmul_peak_gflops"] == max(result["matmul_peaks_gflops"]) > 0
    for run in result["runs"].values():
        assert run["steps"] >= 1 and len(run["round_s"]) == 2
        assert run["best_s"] == min(run["round_s"]) > 0
        assert 0 < run["target_tokens"] <= run["padded_target_tokens"]
        assert run["tokens_per_second"] == pytest.approx(run["target_tokens"] / run["best_s"])
        assert run["tokens_per_second"] > 0
        assert 0 < run["mfu"] <= 1
    runs = result["runs"]
    # Identical batches: the same batches, so the same tokens and FLOPs for both models;
    # end to end: the same pairs, so the same real target tokens.
    for key in ("target_tokens", "padded_target_tokens", "training_flops", "shapes"):
        assert runs["ours/bucketed/no-jit"][key] == runs["peer/bucketed/no-jit"][key]
    assert (
        runs["peer/fixed/no-jit"]["target_tokens"] == runs["ours/bucketed/no-jit"]["target_tokens"]
    )
    assert runs["peer/fixed/no-jit"]["shapes"] == [[8, result["data"]["peer_length"]]]

    ratios = {ratio["comparison"]: ratio for ratio in result["ratios"]}
    assert set(ratios) == {"identical batches", "end to end"}
    for ratio, peer_run in (
        (ratios["identical batches"], runs["peer/bucketed/no-jit"]),
        (ratios["end to end"], runs["peer/fixed/no-jit"]),
    ):
        assert ratio["ours_tokens_per_second"] == runs["ours/bucketed/no-jit"]["tokens_per_second"]
        assert ratio["peer_tokens_per_second"] == peer_run["tokens_per_second"]
        assert ratio["ratio"] == pytest.approx(
            ratio["ours_tokens_per_second"] / ratio["peer_tokens_per_second"]
        )
        assert ratio["met"] == (ratio["ratio"] >= ratio["target"])

    # The printed ratios are the quotients of the printed throughputs (up to rounding).
    printed = re.findall(
        r"([\d.]+) /\s+([\d.]+) = ([\d.]+)x", train_throughput.format_table(result)
    )
    assert len(printed) == 2
    for ours, peer, ratio in printed:
        assert float(ratio) == pytest.approx(float(ours) / float(peer), abs=0.006)


@needs_multi30k
def test_decode_benchmark_smoke(tokenizer_cache: str):
    config = decode_throughput.quick_config(
        sentences=6,
        batch_size=6,
        step_points=(2, 4),
        step_rows=4,
        data_dir=str(MULTI30K_DIR),
        cache_dir=tokenizer_cache,
        engines=False,  # tests/tools/test_benchmark_engines.py
    )
    result = decode.run_decode_benchmark(config)
    for timing in result["sentences_per_second"].values():
        assert timing["cached"] > 0 and timing["recomputed"] > 0
        assert timing["speedup"] == pytest.approx(timing["cached"] / timing["recomputed"])
        assert timing["drop_speedup"] == pytest.approx(timing["cached"] / timing["cached_all_rows"])
        assert timing["speedup_over_tutorial"] == pytest.approx(
            timing["cached"] / timing["recomputed_all_rows"]
        )
    assert set(result["sentences_per_second"]) == {"greedy", "beam4"}
    assert "engines" not in result and result["model"] == "random weights"
    assert [row["step"] for row in result["step_times"]] == [2, 4]
    export = result["export"]
    assert export["ratio_exported_over_library"] == pytest.approx(
        export["exported"] / export["in_library"]
    )
    int8 = result["int8"]
    # int8 kernels: the weights file shrinks (embeddings and norms stay float32).
    assert 0 < int8["int8_bytes"] < int8["float32_bytes"]
    for name in ("greedy", "beam4"):
        assert int8[name]["speedup"] == pytest.approx(int8[name]["int8"] / int8[name]["float32"])
        assert 0.0 <= int8[name]["same_output"] <= 1.0
    table = decode.format_decode_table(result)
    assert (
        "cache speed-up" in table
        and "dropping speed-up" in table
        and "exported SavedModel" in table
        and "int8" in table
    )


@needs_multi30k
def test_serve_benchmark_smoke(tokenizer_cache: str):
    config = serve_throughput.quick_config(
        data_dir=str(MULTI30K_DIR), cache_dir=tokenizer_cache, requests=3
    )
    result = serve_throughput.run_serve_benchmark(config)
    rows = result["rows"]
    assert [(r["variant"], r["batch_size"], r["callers"]) for r in rows] == [
        ("export", 1, 1), ("export", 4, 1), ("export", 4, 2), ("export", 40, 1),
        ("export 1 thread", 4, 2), ("export unchunked", 4, 1), ("export unchunked", 40, 1),
        ("greedy", 4, 1), ("library", 4, 1),
    ]  # fmt: skip
    for row in rows:
        assert row["sentences_per_s"] > 0 and row["p99_ms"] >= row["p50_ms"] > 0
        assert row["loaded_mb"] > 100 and row["peak_above_start_mb"] >= 0
        assert row["requests"] == -(-row["sentences"] // row["batch_size"])
    assert [row["sentences"] for row in rows[:4]] == [3, 12, 24, 40]
    assert [row["intra_op_threads"] for row in rows] == [0, 0, 0, 0, 1, 0, 0, 0, 0]
    ratios = result["ratios"]
    assert ratios["chunked / unchunked speed at 40"] == pytest.approx(
        rows[3]["sentences_per_s"] / rows[6]["sentences_per_s"]
    )
    assert ratios["export / library speed at 4"] == pytest.approx(
        rows[1]["sentences_per_s"] / rows[8]["sentences_per_s"]
    )
    assert ratios["2 callers: 1 intra-op thread / default speed"] == pytest.approx(
        rows[4]["sentences_per_s"] / rows[2]["sentences_per_s"]
    )
    table = serve_throughput.format_serve_table(result)
    assert table.count("sentences/s") == len(rows) and "export / library" in table


def test_stream_benchmark_smoke(tmp_path):
    from keras_attention.data.corpus_shards import write_sharded_corpus
    from tools.benchmarks import stream_throughput

    write_sharded_corpus(tmp_path / "small", 600, 2)
    config = stream_throughput.quick_config(
        corpus_dirs=(str(tmp_path / "small"),), batches=2, train_steps=0, sample_pairs=300
    )
    result = stream_throughput.run_stream_benchmark(config)
    (corpus,) = result["corpora"]
    for measurement in (corpus["all_cores"], corpus["one_core"]):
        assert measurement["shards"] == 2 and measurement["batches"] == 2
        assert 0 < measurement["tokens"] <= measurement["padded_tokens"]
        assert measurement["tokens_per_s"] == pytest.approx(
            measurement["tokens"] / measurement["seconds"]
        )
        assert measurement["first_batch_s"] > 0 and measurement["peak_mib"] > 100
    assert result["tokens_per_s_per_core"] == corpus["one_core"]["tokens_per_s"]
    base = result["paper"]["base"]
    assert base["tokens_per_s_per_gpu"] == pytest.approx(50_000 / 0.4 / 8)
    assert base["cores_per_gpu"] == pytest.approx(
        base["tokens_per_s_per_gpu"] / result["tokens_per_s_per_core"]
    )
    assert "cores of this CPU per GPU" in stream_throughput.format_stream_table(result)
    with pytest.raises(FileNotFoundError, match="no train"):
        stream_throughput.run_stream_benchmark(
            dataclasses.replace(config, corpus_dirs=(str(tmp_path),))
        )
