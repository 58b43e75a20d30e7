"""The decode benchmark as one command runs it: our searches (`decode_throughput`), then ours
against the other engines (`engines`) on the same model and sentences.

Its own module so that `engines`, which uses `decode_throughput`'s helpers, is not imported
back by it.
"""

import dataclasses

from keras_attention.data.multi30k import load_multi30k
from keras_attention.runs.files import read_run_config

from .decode_throughput import (
    DecodeBenchmarkConfig,
    benchmark_model,
    decode_sections,
    format_sections,
)
from .engines import format_engines_table, run_engines
from .train_throughput import DEFAULT_DATA_DIR


def run_decode_benchmark(config: DecodeBenchmarkConfig) -> dict:
    """Runs every measurement; returns a dict of results (see `decode_throughput`'s docstring)."""
    splits = load_multi30k(
        config.data_dir or DEFAULT_DATA_DIR, source_language=source_language(config.run_dir)
    )
    model, tokenizer, config = benchmark_model(config, splits)
    sentences, references = (side[: config.sentences] for side in splits["test"])
    result = {"config": dataclasses.asdict(config), "model": config.run_dir or "random weights"}
    if not config.engines_only:
        result.update(decode_sections(model, tokenizer, sentences, config))
    if config.engines or config.engines_only:
        trained = config.run_dir is not None
        result["engines"] = run_engines(model, tokenizer, sentences, references, config, trained)
    return result


def source_language(run_dir: str | None) -> str:
    """The run's source language (`config.json`'s `source_lang`: a German-English run decodes
    German sentences against English references); English for random weights."""
    if run_dir is None:
        return "en"
    return read_run_config(run_dir).get("source_lang") or "en"


def format_decode_table(result: dict) -> str:
    """A readable summary of `run_decode_benchmark`'s result."""
    parts = [f"model: {result['model']}"]
    if "sentences_per_second" in result:
        parts.append(format_sections(result))
    if "engines" in result:
        parts.append(format_engines_table(result["engines"]))
    return "\n\n".join(parts)
