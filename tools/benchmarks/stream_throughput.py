"""Streaming at WMT's scale (issue 14): memory, time to the first batch, tokens per second.

For each corpus folder of text shards (`tools/make_corpus_shards.py`), in fresh processes
(`stream_worker.py`): the time from the start of the stream to its first batch, the input
pipeline's real source + target tokens per second with all cores and with one (tf.data's
private thread pool of 1 thread), and the process's peak resident memory; optionally a
`tiny` Transformer trained on the stream for a few steps. Memory and time to the first batch
must not grow with the corpus. From the one-core rate: how many CPU cores per GPU the paper's
input throughput needs (Section 5.1-5.2: batches of about 25,000 source and 25,000 target
tokens, 0.4 s a step for the base model and 1.0 s for the big one, on 8 P100 GPUs).
"""

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from keras_attention.data.streaming import parallel_text, train_shards
from keras_attention.data.tokenizer import SubwordTokenizer

WORKER = Path(__file__).with_name("stream_worker.py")
ROOT = Path(__file__).resolve().parents[2]
PAPER_TOKENS_PER_STEP = 50_000  # about 25,000 source + 25,000 target tokens
PAPER_STEP_SECONDS = {"base": 0.4, "big": 1.0}
PAPER_GPUS = 8


@dataclasses.dataclass
class StreamBenchmarkConfig:
    """Settings of the streaming benchmark.

    Attributes:
        corpus_dirs: folders of shards, smallest corpus first.
        batches: batches timed per measurement, after the first.
        max_tokens: padded tokens per batch.
        max_length: longest pair kept, in tokens.
        vocabulary_size: of the SentencePiece model learnt from a sample of the first corpus.
        sample_pairs: the pairs of that sample (the first of the shards, read interleaved).
        shuffle_buffer: pairs held for shuffling.
        train_steps: > 0: also train a `tiny` Transformer this many steps on each stream.
        seed: shuffling seed.
    """

    corpus_dirs: tuple[str, ...] = ()
    batches: int = 1000
    max_tokens: int = 4096
    max_length: int = 128
    vocabulary_size: int = 500  # the generated grammar's lexicon fills about 600 pieces
    sample_pairs: int = 100_000
    shuffle_buffer: int = 100_000
    train_steps: int = 0
    seed: int = 0


def quick_config(**changes) -> StreamBenchmarkConfig:
    """A smoke-test configuration: a few batches, a small vocabulary and buffer."""
    settings = dict(
        batches=5, vocabulary_size=300, sample_pairs=2000, shuffle_buffer=1000, train_steps=2
    )
    return StreamBenchmarkConfig(**{**settings, **changes})


def learn_tokenizer(config: StreamBenchmarkConfig) -> SubwordTokenizer:
    """SentencePiece learnt from the first `sample_pairs` pairs of the first corpus."""
    sources, targets = train_shards(config.corpus_dirs[0])
    sample = parallel_text(sources, targets).take(config.sample_pairs)
    texts = [text.decode() for pair in sample.as_numpy_iterator() for text in pair]
    return SubwordTokenizer.train(texts, config.vocabulary_size)


def run_worker(spec: dict) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(spec, handle)
    done = subprocess.run(
        [sys.executable, str(WORKER), handle.name],
        capture_output=True, text=True, check=False, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    Path(handle.name).unlink()
    if done.returncode != 0:
        raise RuntimeError(f"stream worker failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_stream_benchmark(config: StreamBenchmarkConfig) -> dict:
    """Every measurement; returns a dict of results (see the module docstring)."""
    if not config.corpus_dirs:
        raise ValueError("corpus_dirs must name at least one folder of shards")
    for folder in config.corpus_dirs:
        train_shards(folder)  # raises FileNotFoundError naming a folder without shards
    tokenizer = learn_tokenizer(config)
    corpora = []
    with tempfile.TemporaryDirectory() as folder:
        path = str(tokenizer.save(Path(folder) / "tokenizer.model"))
        for corpus_dir in config.corpus_dirs:
            spec = {
                "corpus_dir": corpus_dir, "tokenizer": path, "batches": config.batches,
                "max_tokens": config.max_tokens, "max_length": config.max_length,
                "shuffle_buffer": config.shuffle_buffer, "seed": config.seed,
            }  # fmt: skip
            all_cores = run_worker({**spec, "threads": None, "train_steps": config.train_steps})
            one_core = run_worker({**spec, "threads": 1, "train_steps": 0})
            corpora.append({"corpus_dir": corpus_dir, "all_cores": all_cores, "one_core": one_core})
    per_core = min(c["one_core"]["tokens_per_s"] for c in corpora)
    needs = {}
    for model, seconds in PAPER_STEP_SECONDS.items():
        per_gpu = PAPER_TOKENS_PER_STEP / seconds / PAPER_GPUS
        needs[model] = {"tokens_per_s_per_gpu": per_gpu, "cores_per_gpu": per_gpu / per_core}
    return {
        "config": dataclasses.asdict(config),
        "corpora": corpora,
        "tokens_per_s_per_core": per_core,
        "paper": needs,
    }


def format_stream_table(result: dict) -> str:
    lines = [
        "corpus | shards | first batch | tokens/s, all cores | tokens/s, one core | "
        "pipeline peak | peak (with training)"
    ]
    for corpus in result["corpora"]:
        every, one = corpus["all_cores"], corpus["one_core"]
        lines.append(
            f"{corpus['corpus_dir']} | {every['shards']} | {every['first_batch_s']:.2f} s | "
            f"{every['tokens_per_s']:,.0f} | {one['tokens_per_s']:,.0f} | "
            f"{every['pipeline_peak_mib']:,.0f} MiB | {every['peak_mib']:,.0f} MiB"
        )
    for model, need in result["paper"].items():
        lines.append(
            f"paper's {model} model: {need['tokens_per_s_per_gpu']:,.0f} tokens/s per GPU = "
            f"{need['cores_per_gpu']:.2f} cores of this CPU per GPU at "
            f"{result['tokens_per_s_per_core']:,.0f} tokens/s per core"
        )
    return "\n".join(lines)
