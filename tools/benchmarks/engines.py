"""Our searches against other decoding engines: sentences per second and sacreBLEU, side by side.

Every engine decodes the same sentences in the same batches (sorted by length, `batch_size`
each), is warmed up once on the first batch, and is timed over `rounds` passes, the best
counting; the time covers ids or pieces in, ids or pieces out (no tokenization or
detokenization). The sacreBLEU of each engine's output is computed on the same references, so
that speed can be read at equal quality. The engines:

- `ours`: `greedy_search` and `beam_search` (with our length penalty `alpha`), each traced
  once into a `tf.function` with dynamic shapes;
- `ours_int8`: the same on a copy quantized with `model.quantize("int8")` (weight-only int8);
- `ctranslate2_float32`, `ctranslate2_int8`: the model converted by
  `keras_attention.serving.ctranslate2_converter` (int8 weights for the second), run by
  `ctranslate2.Translator(device="cpu", intra_threads=<cores>)`. Its length penalty is
  `score / length ** p`, ours `score / ((5 + length) / 6) ** alpha`: the beam rows use the
  `p` of `length_penalties` whose sacreBLEU is closest to ours (float32 or int8, the
  matching row), found by one untimed pass each, and report it. CTranslate2 takes one length
  limit per call: each batch gets its longest sentence's (`source pieces + extra_length`
  tokens before EOS, as ours), where ours limits each sentence to its own;
- `keras_hub`: keras-hub's `GreedySampler` and `BeamSampler` driven by our model's cached
  step (see `keras_hub_search` for what is unequal: no length penalty, finished beams in the
  beam).

Ratios: ours against CTranslate2 float32, ours int8 against CTranslate2 int8, ours against
keras-hub, for each search; the beam rows carry the issue's goals (at least 1x, 1x and 2x).
With a random-weights model sacreBLEU means nothing (the table says so); speed does not
depend on the weights, but a random model never ends early.
"""

import dataclasses
import os
import tempfile
from collections.abc import Callable, Sequence

import numpy as np
import tensorflow as tf

from keras_attention.core.special_tokens import EOS_ID, PAD_ID
from keras_attention.evaluation import score
from keras_attention.serving.ctranslate2_converter import (
    SUPPRESSED_SEQUENCES,
    convert_to_ctranslate2,
    detokenize,
    source_tokens,
)

from .decode_throughput import (
    IDS_SPEC,
    DecodeBenchmarkConfig,
    decoder_function,
    quantized_copy,
    source_batches,
)
from .keras_hub_search import keras_hub_sampler, sampler_search
from .timing import Stopwatch, summarize_rounds

# (numerator, denominator, the goal for beam search): ratios of sentences per second.
RATIOS = (
    ("ours", "ctranslate2_float32", 1.0),
    ("ours_int8", "ctranslate2_int8", 1.0),
    ("ours", "keras_hub", 2.0),
)
# The decode benchmark's settings that the engines use, reported with their results.
SETTINGS = ("batch_size", "beam_size", "alpha", "extra_length", "rounds", "length_penalties")


@dataclasses.dataclass
class EngineBatches:
    """The sentences as every engine gets them: batches sorted by length.

    Attributes:
        ids: padded id batches ending with EOS (ours, keras-hub).
        pieces: the same batches as SentencePiece pieces without EOS (CTranslate2).
        references: the references, in the batches' order.
        max_pieces: per batch, its longest source in pieces (without EOS).
    """

    ids: list
    pieces: list
    references: list
    max_pieces: list


def engine_batches(
    tokenizer, sentences: Sequence[str], references: Sequence[str], batch_size: int
) -> EngineBatches:
    """Sorts `sentences` by length (with their references) and cuts them into batches."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    ordered = [sentences[i] for i in order]
    pieces = [
        source_tokens(tokenizer, ordered[start : start + batch_size])
        for start in range(0, len(ordered), batch_size)
    ]
    return EngineBatches(
        ids=source_batches(tokenizer, ordered, batch_size),  # sorted already: order kept
        pieces=pieces,
        references=[references[i] for i in order],
        max_pieces=[max(len(sentence) for sentence in batch) for batch in pieces],
    )


def measure(decode: Callable, batches: Sequence, rounds: int) -> tuple[list, dict]:
    """Warms `decode` up on the first batch, then times `rounds` passes over all batches.

    Returns:
        The outputs of the last pass, one per batch, and `summarize_rounds`'s best and
        median seconds.
    """
    decode(batches[0])
    seconds, outputs = [], []
    for _ in range(rounds):
        with Stopwatch() as watch:
            outputs = [decode(batch) for batch in batches]
        seconds.append(watch.seconds)
    return outputs, summarize_rounds(seconds)


def engine_row(texts: list[str], lengths: list[int], timing: dict, references: list[str]) -> dict:
    """One engine and search: sentences/s, the timing, sacreBLEU and mean output length."""
    return {
        "sentences_per_second": len(texts) / timing["best"],
        "best_s": timing["best"],
        "median_s": timing["median"],
        "bleu": score(texts, references).bleu,
        "mean_output_tokens": float(np.mean(lengths)),
    }


def tf_engine_row(search: Callable, tokenizer, batches: EngineBatches, rounds: int) -> dict:
    """Times `search` (source ids -> output ids) traced once into a `tf.function`."""
    function = tf.function(search, input_signature=[IDS_SPEC], autograph=False)
    outputs, timing = measure(function, batches.ids, rounds)
    texts, lengths = [], []
    for tokens in outputs:
        texts += [text.decode("utf-8") for text in tokenizer.detokenize(tokens).numpy()]
        tokens = tokens.numpy()
        lengths += list(np.sum((tokens != PAD_ID) & (tokens != EOS_ID), axis=1))
    return engine_row(texts, lengths, timing, batches.references)


def searches(beam_size: int) -> dict[str, int]:
    """The rows of each engine: `{"greedy": 1, "beam<k>": k}`, as `decode_throughput` names them."""
    return {"greedy": 1, f"beam{beam_size}": beam_size}


def ours_rows(model, tokenizer, batches: EngineBatches, config: DecodeBenchmarkConfig) -> dict:
    """`greedy_search` and `beam_search` (length penalty `config.alpha`) over `model`."""
    rows = {}
    for name, beam in searches(config.beam_size).items():
        function = decoder_function(model, beam, config.alpha, config.extra_length, True)
        search = lambda ids, f=function: f(ids)[0]  # noqa: E731
        rows[name] = tf_engine_row(search, tokenizer, batches, config.rounds)
    return rows


def keras_hub_rows(model, tokenizer, batches: EngineBatches, config: DecodeBenchmarkConfig) -> dict:
    """keras-hub's `GreedySampler` and `BeamSampler` over `model`'s cached step."""
    rows = {}
    for name, beam in searches(config.beam_size).items():
        sampler = keras_hub_sampler(beam)
        search = lambda ids, s=sampler: sampler_search(model, ids, s, config.extra_length)  # noqa: E731
        rows[name] = tf_engine_row(search, tokenizer, batches, config.rounds)
    return rows


def ctranslate2_translator(model, tokenizer, quantization: str | None, threads: int):
    """`model` converted (with `quantization`) and loaded as a CPU `ctranslate2.Translator`."""
    import ctranslate2

    with tempfile.TemporaryDirectory() as folder:  # the translator holds the weights in memory
        path = convert_to_ctranslate2(model, tokenizer, f"{folder}/model", quantization)
        return ctranslate2.Translator(
            str(path), device="cpu", compute_type=quantization or "float32", intra_threads=threads
        )


def ctranslate2_rows(
    translator,
    tokenizer,
    batches: EngineBatches,
    config: DecodeBenchmarkConfig,
    target_bleu: float,
) -> dict:
    """CTranslate2's greedy and beam search; the beam row's length penalty is the one of
    `config.length_penalties` whose sacreBLEU is closest to `target_bleu` (reported)."""
    work = list(zip(batches.pieces, batches.max_pieces, strict=True))

    def row(beam: int, penalty: float, rounds: int) -> dict:
        def decode(batch):
            pieces, longest = batch
            return translator.translate_batch(
                pieces,
                beam_size=beam,
                length_penalty=penalty,
                max_decoding_length=longest + config.extra_length,  # tokens before EOS
                max_batch_size=config.batch_size,
                suppress_sequences=SUPPRESSED_SEQUENCES,
            )

        outputs, timing = measure(decode, work, rounds)
        hypotheses = [result.hypotheses[0] for results in outputs for result in results]
        texts = detokenize(tokenizer, hypotheses)
        lengths = [len(hypothesis) for hypothesis in hypotheses]
        return engine_row(texts, lengths, timing, batches.references)

    greedy_name, beam_name = searches(config.beam_size)
    tried = {
        penalty: row(config.beam_size, penalty, 1)["bleu"] for penalty in config.length_penalties
    }
    chosen = min(tried, key=lambda penalty: abs(tried[penalty] - target_bleu))
    rows = {
        greedy_name: row(1, 0.0, config.rounds),
        beam_name: row(config.beam_size, chosen, config.rounds),
    }
    rows[beam_name]["length_penalty"] = chosen
    rows[beam_name]["bleu_by_length_penalty"] = {str(p): bleu for p, bleu in tried.items()}
    return rows


def engine_ratios(engines: dict, beam_size: int) -> list[dict]:
    """Sentences/s of each pair of `RATIOS`, for each search, with the BLEU difference."""
    ratios = []
    for name in searches(beam_size):
        for numerator, denominator, goal in RATIOS:
            top, bottom = engines[numerator][name], engines[denominator][name]
            ratio = top["sentences_per_second"] / bottom["sentences_per_second"]
            ratios.append(
                {
                    "search": name,
                    "numerator": numerator,
                    "denominator": denominator,
                    "ratio": ratio,
                    "bleu_difference": top["bleu"] - bottom["bleu"],
                    "goal": None if name == "greedy" else goal,
                    "met": None if name == "greedy" else ratio >= goal,
                }
            )
    return ratios


def run_engines(
    model,
    tokenizer,
    sentences: Sequence[str],
    references: Sequence[str],
    config: DecodeBenchmarkConfig,
    trained: bool,
) -> dict:
    """Measures every engine on `sentences` (see the module docstring).

    Args:
        model: a built float32 `Transformer` (a mixed-precision one decodes in bfloat16 or
            float16, which CTranslate2's float32 would not).
        tokenizer: its tokenizer.
        sentences: the source sentences.
        references: one reference each, for sacreBLEU.
        config: the decode benchmark's settings: `batch_size`, `beam_size`, `alpha`,
            `extra_length`, `rounds`, `length_penalties`.
        trained: whether the weights are trained (else sacreBLEU is marked meaningless).

    Returns:
        `{"settings": ..., "engines": {engine: {search: row}}, "ratios": [...]}`; a row holds
        `sentences_per_second`, `best_s`, `median_s`, `bleu`, `mean_output_tokens` (and, for
        CTranslate2's beam, `length_penalty` and `bleu_by_length_penalty`).
    """
    threads = len(os.sched_getaffinity(0))
    batches = engine_batches(tokenizer, sentences, references, config.batch_size)
    engines = {"ours": ours_rows(model, tokenizer, batches, config)}
    engines["ours_int8"] = ours_rows(quantized_copy(model), tokenizer, batches, config)
    beam_name = f"beam{config.beam_size}"
    for quantization, ours in ((None, "ours"), ("int8", "ours_int8")):
        translator = ctranslate2_translator(model, tokenizer, quantization, threads)
        engines[f"ctranslate2_{quantization or 'float32'}"] = ctranslate2_rows(
            translator, tokenizer, batches, config, engines[ours][beam_name]["bleu"]
        )
        del translator
    engines["keras_hub"] = keras_hub_rows(model, tokenizer, batches, config)
    settings = {
        "sentences": len(sentences),
        "batches": len(batches.ids),
        "threads": threads,
        "bleu_meaningful": trained,
        **{name: getattr(config, name) for name in SETTINGS},
    }
    return {
        "settings": settings,
        "engines": engines,
        "ratios": engine_ratios(engines, config.beam_size),
    }


def format_engines_table(result: dict) -> str:
    """A readable summary of `run_engines`'s result."""
    settings = result["settings"]
    bleu_note = "" if settings["bleu_meaningful"] else " (random weights: BLEU means nothing)"
    lines = [
        f"engines: {settings['sentences']} sentences in {settings['batches']} batches of "
        f"{settings['batch_size']} sorted by length, best of {settings['rounds']} rounds, "
        f"{settings['threads']} threads, our alpha {settings['alpha']}, outputs up to source "
        f"length + {settings['extra_length']}{bleu_note}",
        f"{'engine':<22}{'search':<8}{'sent/s':>10}{'BLEU':>8}{'out tokens':>12}",
    ]
    for engine, rows in result["engines"].items():
        for name, row in rows.items():
            note = ""
            if "length_penalty" in row:
                note = (
                    f"  length_penalty {row['length_penalty']} (closest BLEU of "
                    + ", ".join(
                        f"{p}: {bleu:.2f}" for p, bleu in row["bleu_by_length_penalty"].items()
                    )
                    + ")"
                )
            lines.append(
                f"{engine:<22}{name:<8}{row['sentences_per_second']:>10.1f}{row['bleu']:>8.2f}"
                f"{row['mean_output_tokens']:>12.1f}{note}"
            )
    lines.append("")
    for ratio in result["ratios"]:
        top = result["engines"][ratio["numerator"]][ratio["search"]]["sentences_per_second"]
        bottom = result["engines"][ratio["denominator"]][ratio["search"]]["sentences_per_second"]
        goal = ""
        if ratio["goal"] is not None:
            goal = f", goal >= {ratio['goal']:g}x: {'met' if ratio['met'] else 'not met'}"
        lines.append(
            f"{ratio['search']:<8}{ratio['numerator']} / {ratio['denominator']}: {top:.1f} / "
            f"{bottom:.1f} = {ratio['ratio']:.2f}x (BLEU {ratio['bleu_difference']:+.2f}{goal})"
        )
    return "\n".join(lines)
