"""Decoding speed: the key/value cache against recomputing the decoder, and the export's cost.

Measured in one process on the same sentences (Multi30k test2016, English):

- sentences per second of greedy and beam search, with the cache and without it (each step
  decodes the whole prefix again, the TensorFlow tutorial's way), each traced once into a
  `tf.function` with dynamic shapes and warmed up before timing; and the cached search
  without dropping finished sentences from its batch (`drop_finished=False`), to show what
  dropping them buys, and the recomputing decoder without dropping them either (the
  tutorial's decoder as it is);
- the time of one decoding step at several positions (10, 30, 60 by default): with the cache
  (grown to the position, as the searches grow it) a step costs nearly the same wherever it
  is (it attends over, and copies, the positions so far); without, it decodes the whole
  prefix again and grows with the position;
- sentences per second of the exported SavedModel's signature (strings in, strings out)
  against the same `Translator` called in the library;
- the int8 model (`model.quantize("int8")` on a copy): its weights file's size against
  float32's, its cached greedy and beam speed against float32's, and the share of sentences
  it decodes to the same tokens.

The model has random weights (speed does not depend on them). A random model never chooses
EOS, so every sentence decodes exactly `source length + extra_length` steps; the default
`extra_length=0` gives outputs as long as their sources, about the length of real
translations. Both sides of every ratio decode the same number of steps. With `run_dir`, the
model of a finished run is measured instead (in float32), with the run's `alpha` and the
paper's `extra_length` of 50 unless given.

Unless `engines=False`, the same sentences are also decoded by other engines (CTranslate2
float32 and int8, keras-hub's samplers) beside ours, with sacreBLEU: see `engines.py`;
`engines_only=True` measures only those.
"""

import dataclasses
import os
import tempfile
from collections.abc import Sequence

import keras
import numpy as np
import tensorflow as tf

from keras_attention.decoding import DEFAULT_EXTRA_LENGTH, beam_search, greedy_search
from keras_attention.evaluation import translate_all
from keras_attention.models import Transformer, copy_with_dtype
from keras_attention.runs.files import run_beam_search
from keras_attention.runs.train import load_run
from keras_attention.serving.export import export_translator, load_exported
from keras_attention.serving.translator import Translator

from .timing import SMOKE_MODEL, Stopwatch, summarize_rounds, time_call
from .train_throughput import cached_tokenizer

IDS_SPEC = tf.TensorSpec([None, None], tf.int32)


@dataclasses.dataclass
class DecodeBenchmarkConfig:
    """Settings of `run_decode_benchmark`.

    Attributes:
        preset: model size.
        model_overrides: preset arguments replaced (random weights only).
        sentences: first N test2016 sentences decoded.
        batch_size: sentences per call (sorted by length first).
        beam_size: beam width of the beam-search rows.
        alpha: length-penalty exponent (default: the run's with `run_dir`, else 0.6).
        extra_length: steps beyond each source's length (default: 50 with `run_dir`, the
            paper's; else 0, see the module docstring).
        step_points: decoding positions whose step time is measured.
        step_rows: hypotheses per measured step.
        rounds: timed repetitions of each measurement; the best counts.
        vocabulary_size: SentencePiece vocabulary (learned from Multi30k train, cached).
        data_dir: the Multi30k folder.
        cache_dir: where the tokenizer is cached.
        seed: initial weights.
        run_dir: a finished run folder whose model is measured; `None`: `preset` with
            random weights.
        engines: also measure the other engines (`engines.py`).
        engines_only: measure only the other engines, not the sections above.
        length_penalties: CTranslate2 length penalties tried; its beam rows use the one
            whose sacreBLEU is closest to ours.
    """

    preset: str = "small"
    model_overrides: dict = dataclasses.field(default_factory=dict)
    sentences: int = 1000
    batch_size: int = 100
    beam_size: int = 4
    alpha: float | None = None
    extra_length: int | None = None
    step_points: tuple = (10, 30, 60)
    step_rows: int = 256
    rounds: int = 2
    vocabulary_size: int = 8000
    data_dir: str | None = None
    cache_dir: str | None = None
    seed: int = 0
    run_dir: str | None = None
    engines: bool = True
    engines_only: bool = False
    length_penalties: tuple = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def quick_config(**changes) -> DecodeBenchmarkConfig:
    """A smoke-test configuration: tiny model, a few sentences, short steps."""
    settings = dict(
        preset="tiny",
        model_overrides=SMOKE_MODEL,
        sentences=24,
        batch_size=12,
        step_points=(4, 8, 16),
        step_rows=16,
        rounds=1,
        vocabulary_size=500,
        length_penalties=(0.0, 1.0),
    )
    return DecodeBenchmarkConfig(**{**settings, **changes})


def source_batches(tokenizer, sentences: Sequence[str], batch_size: int) -> list[tf.Tensor]:
    """Sentences as padded id batches (EOS appended), sorted by length."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    batches = []
    for start in range(0, len(order), batch_size):
        chunk = [sentences[i] for i in order[start : start + batch_size]]
        pieces = tokenizer.tokenize(tf.constant(chunk))
        eos = tf.fill([pieces.nrows(), 1], 3)
        batches.append(tf.concat([pieces, eos], axis=1).to_tensor(0))
    return batches


def decoder_function(
    model,
    beam_size: int,
    alpha: float,
    extra_length: int,
    use_cache: bool,
    drop_finished: bool = True,
):
    """One traced `tf.function` (dynamic shapes) for a search setting."""
    options = dict(extra_length=extra_length, use_cache=use_cache, drop_finished=drop_finished)
    if beam_size == 1:
        search = lambda ids: greedy_search(model, ids, **options)  # noqa: E731
    else:
        search = lambda ids: beam_search(model, ids, beam_size, alpha, **options)  # noqa: E731
    return tf.function(search, input_signature=[IDS_SPEC], autograph=False)


def time_batches(function, batches: Sequence[tf.Tensor], rounds: int) -> dict:
    """Warms `function` up on the first batch, then times one pass over all batches."""
    function(batches[0])
    seconds = [time_call(lambda: [function(b) for b in batches]) for _ in range(rounds)]
    return summarize_rounds(seconds)


def step_functions(model, rows: int):
    """Single decoding steps: with the cache (grown to the step's position, as the searches
    grow it) and without (the whole prefix again)."""
    encoded, mask = model.encode(tf.ones([rows, 20], tf.int32))
    cross = model.decoder.compute_cross_attention_cache(encoded)
    attention = model.decoder.blocks[0].self_attention
    cache_spec = tf.TensorSpec(
        [2, rows, attention.num_heads, None, attention.head_key_dim], model.compute_dtype
    )
    cache_specs = [cache_spec] * len(model.decoder.blocks)

    @tf.function(
        input_signature=[
            tf.TensorSpec([rows, 1], tf.int32),
            tf.TensorSpec([], tf.int32),
            cache_specs,
        ],
        autograph=False,
    )
    def cached(token, index, caches):
        return model.decode(
            token,
            encoded,
            mask,
            start_index=index,
            self_attention_cache=caches,
            cross_attention_cache=cross,
            append_to_cache=True,
        )

    @tf.function(input_signature=[IDS_SPEC], autograph=False)
    def recomputed(prefix):
        return model.decode(prefix, encoded, mask)

    return cached, recomputed


def time_steps(model, config: DecodeBenchmarkConfig) -> list[dict]:
    """Seconds per step at each position of `config.step_points`, cached and recomputed."""
    rows = config.step_rows
    cached, recomputed = step_functions(model, rows)
    token = tf.fill([rows, 1], 5)
    results = []
    for point in config.step_points:
        index = tf.constant(point, tf.int32)
        caches = model.decoder.initial_cache(rows, point)  # the positions before `point`
        prefix = tf.fill([rows, point + 1], 5)
        cached(token, index, caches), recomputed(prefix)  # warm up
        with_cache = [
            time_call(lambda i=index, c=caches: cached(token, i, c)) for _ in range(config.rounds)
        ]
        without = [time_call(lambda p=prefix: recomputed(p)) for _ in range(config.rounds)]
        results.append(
            {
                "step": point,
                "cached_ms": 1000 * min(with_cache),
                "recomputed_ms": 1000 * min(without),
            }
        )
    return results


def quantized_copy(model: Transformer) -> Transformer:
    """A copy of `model` with the same weights, quantized to int8."""
    copy = copy_with_dtype(model, model.dtype_policy.name)
    copy.quantize("int8")
    return copy


def weights_bytes(model: keras.Model) -> int:
    """The size of `model.save_weights`'s file."""
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/model.weights.h5"
        model.save_weights(path)
        return os.path.getsize(path)


def time_int8(
    model: Transformer, batches: Sequence[tf.Tensor], config, float32_functions: dict | None = None
) -> dict:
    """Size, cached search speed and output agreement of the int8 copy against `model`.

    `float32_functions`: `model`'s cached searches already traced, `{beam width: function}`
    (`decoder_function`), so that they are not traced again; the missing ones are made.
    """
    quantized = quantized_copy(model)
    sentences = sum(int(batch.shape[0]) for batch in batches)
    result = {"float32_bytes": weights_bytes(model), "int8_bytes": weights_bytes(quantized)}
    result["size_ratio"] = result["int8_bytes"] / result["float32_bytes"]
    traced = float32_functions or {}

    def search(m: Transformer, beam: int):
        return decoder_function(m, beam, config.alpha, config.extra_length, use_cache=True)

    for beam in (1, config.beam_size):
        float32 = traced[beam] if beam in traced else search(model, beam)
        functions = {"float32": float32, "int8": search(quantized, beam)}
        timing = {
            name: sentences / time_batches(function, batches, config.rounds)["best"]
            for name, function in functions.items()
        }
        same = 0
        for batch in batches:
            tokens = [function(batch)[0].numpy() for function in functions.values()]
            width = min(t.shape[1] for t in tokens)
            same += int(np.sum(np.all(tokens[0][:, :width] == tokens[1][:, :width], axis=1)))
        timing["speedup"] = timing["int8"] / timing["float32"]
        timing["same_output"] = same / sentences
        result["greedy" if beam == 1 else f"beam{beam}"] = timing
    return result


def time_export(translator: Translator, sentences: Sequence[str], rounds: int) -> dict:
    """Sentences per second of the exported signature and of the in-library translator."""
    with tempfile.TemporaryDirectory() as folder:
        with Stopwatch() as export_watch:
            path = export_translator(translator, folder)
        serve = load_exported(path)
        timings = {}
        for name, function in (("in_library", translator.translate), ("exported", serve)):
            translate_all(function, sentences[:8])  # warm up
            seconds = [
                time_call(lambda f=function: translate_all(f, sentences)) for _ in range(rounds)
            ]
            timings[name] = len(sentences) / summarize_rounds(seconds)["best"]
    timings["ratio_exported_over_library"] = timings["exported"] / timings["in_library"]
    timings["export_seconds"] = export_watch.seconds
    return timings


def benchmark_model(config: DecodeBenchmarkConfig, splits: dict):
    """The model measured, its tokenizer, and `config` with `alpha` and `extra_length` set.

    With `config.run_dir`, the run's model as float32 (a mixed-precision run's model would
    decode in bfloat16 or float16), its `alpha` and an `extra_length` of 50; else `preset`
    with random weights, an `alpha` of 0.6 and an `extra_length` of 0.
    """
    if config.run_dir is not None:
        model, tokenizer = load_run(config.run_dir)
        model = copy_with_dtype(model, "float32")
        defaults = {
            "alpha": run_beam_search(config.run_dir)[1],
            "extra_length": DEFAULT_EXTRA_LENGTH,
        }
    else:
        train_en, train_de = splits["train"]
        tokenizer = cached_tokenizer(train_en + train_de, config.vocabulary_size, config.cache_dir)
        keras.utils.set_random_seed(config.seed)
        model = Transformer.from_preset(
            config.preset,
            vocabulary_size=tokenizer.vocabulary_size,
            **{"dropout": 0.0, **config.model_overrides},
        )
        model.build()
        defaults = {"alpha": 0.6, "extra_length": 0}
    unset = {name: value for name, value in defaults.items() if getattr(config, name) is None}
    return model, tokenizer, dataclasses.replace(config, **unset)


def decode_sections(model, tokenizer, sentences: Sequence[str], config) -> dict:
    """Cache against recomputing, step times, the export and int8 (the module docstring)."""
    batches = source_batches(tokenizer, sentences, config.batch_size)
    searches, cached_functions = {}, {}
    for beam in (1, config.beam_size):
        name = "greedy" if beam == 1 else f"beam{beam}"
        timing = {}
        for key, use_cache, drop_finished in (
            ("cached", True, True),
            ("recomputed", False, True),
            ("cached_all_rows", True, False),
            ("recomputed_all_rows", False, False),
        ):
            function = decoder_function(
                model, beam, config.alpha, config.extra_length, use_cache, drop_finished
            )
            best = time_batches(function, batches, config.rounds)["best"]
            timing[key] = len(sentences) / best
            if key == "cached":
                cached_functions[beam] = function  # timed again against int8
        timing["speedup"] = timing["cached"] / timing["recomputed"]
        timing["drop_speedup"] = timing["cached"] / timing["cached_all_rows"]
        # The recomputing decoder as the TensorFlow tutorial runs it (every row to the end).
        timing["speedup_over_tutorial"] = timing["cached"] / timing["recomputed_all_rows"]
        searches[name] = timing
    translator = Translator(
        model, tokenizer, config.beam_size, config.alpha, extra_length=config.extra_length
    )
    return {
        "sentences_per_second": searches,
        "step_times": time_steps(model, config),
        "export": time_export(translator, sentences, config.rounds),
        "int8": time_int8(model, batches, config, cached_functions),
        "mean_source_tokens": sum(int(np.sum(b.numpy() > 0)) for b in batches) / len(sentences),
    }


def format_sections(result: dict) -> str:
    """The sections of `decode_sections` in `result`, as a table."""
    config = result["config"]
    lines = [
        f"{config['sentences']} Multi30k test2016 sentences, preset {config['preset']}, "
        f"batches of {config['batch_size']}, mean source length "
        f"{result['mean_source_tokens']:.1f} tokens, outputs source length + "
        f"{config['extra_length']}",
        "",
        f"{'search':<10}{'cached sent/s':>15}{'recomputed sent/s':>20}{'cache speed-up':>16}"
        f"{'cached, no row dropped':>24}{'dropping speed-up':>19}"
        f"{'recomputed, no row dropped':>28}{'cached over it':>16}",
    ]
    for name, timing in result["sentences_per_second"].items():
        lines.append(
            f"{name:<10}{timing['cached']:>15.1f}{timing['recomputed']:>20.1f}"
            f"{timing['speedup']:>15.2f}x{timing['cached_all_rows']:>24.1f}"
            f"{timing['drop_speedup']:>18.2f}x{timing['recomputed_all_rows']:>28.1f}"
            f"{timing['speedup_over_tutorial']:>15.2f}x"
        )
    lines += ["", f"one step of {config['step_rows']} hypotheses:"]
    lines.append(f"{'position':<10}{'cached ms':>12}{'recomputed ms':>16}")
    for row in result["step_times"]:
        lines.append(f"{row['step']:<10}{row['cached_ms']:>12.2f}{row['recomputed_ms']:>16.2f}")
    export = result["export"]
    lines += [
        "",
        f"beam {config['beam_size']}, strings in and out: exported SavedModel "
        f"{export['exported']:.1f} sent/s, in-library Translator {export['in_library']:.1f} "
        f"sent/s, ratio {export['ratio_exported_over_library']:.2f} "
        f"(export took {export['export_seconds']:.1f} s)",
    ]
    int8 = result["int8"]
    lines += [
        "",
        f"int8 (model.quantize): weights file {int8['int8_bytes'] / 1e6:.1f} MB against "
        f"float32's {int8['float32_bytes'] / 1e6:.1f} MB ({int8['size_ratio']:.2f}x)",
        f"{'search':<10}{'float32 sent/s':>16}{'int8 sent/s':>13}{'int8 speed':>12}"
        f"{'same output':>13}",
    ]
    for name in result["sentences_per_second"]:
        t = int8[name]
        lines.append(
            f"{name:<10}{t['float32']:>16.1f}{t['int8']:>13.1f}{t['speedup']:>11.2f}x"
            f"{t['same_output']:>12.0%}"
        )
    return "\n".join(lines)
