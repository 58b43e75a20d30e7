"""Training recipes, and the rule that picks one from the size of a corpus (not its name).

- `closed-vocabulary`: fewer than 5,000 distinct words. The tiny preset with 3+3 layers and
  dropout 0.1; vocabulary words / 3 (100 to 400); batches of 2,048 tokens; 100,000 / pairs
  epochs (5 to 100), warm-up 400; float32, cased.
- `small`: 5,000 words or more, under 300,000 pairs (Multi30k: 29,000). The tiny preset,
  pre-LN; vocabulary words / 3 (at most 4,000); 2,048 tokens; 48 epochs, the last 16 a
  cool-down; warm-up 4,000, peak x2.5; bfloat16*; lowercased, with a recaser.
- `medium`: 300,000 to 3,000,000 pairs. The small preset, pre-LN; vocabulary 8,000; 4,096
  tokens; 20 epochs, the last 5 a cool-down; warm-up 4,000; bfloat16*; cased.
- `large`: 3,000,000 pairs or more, or streamed. The paper's base; vocabulary 32,000; 4,096
  tokens; 100,000 steps in rounds of 2,000; warm-up 4,000; float32; cased.

*bfloat16 where it is fast: with a GPU, or a CPU with bfloat16 instructions (AVX512-BF16,
AMX); float32 elsewhere (`for_this_machine`). A resumed run keeps the precision it started
with.

"Words" are the distinct lowercased, whitespace-separated words of both sides of the
training pairs (of the tokenizer's sample, for a streamed corpus). `small` is the recipe
chosen on Multi30k's validation split (docs/experiments); the generated corpus (20,000 pairs of
a grammar of about 1,500 words) gets `closed-vocabulary`, whose settings reach 95% held-out
token accuracy there in about 5 minutes on 2 CPU cores. `medium` and `large` are the paper's
settings scaled to their corpora; they were not tuned here.

Every option given on the command line wins over the recipe, and the settings that depend on
the schedule's length follow it: given `epochs` (or `train_steps`) but not the cool-down or
the warm-up, those two keep their share of the recipe's schedule, and the validation
interval and averaging shrink to fit.
"""

import dataclasses
import math

RECIPE_NAMES = ("closed-vocabulary", "small", "medium", "large")
CLOSED_VOCABULARY_WORDS = 5_000
MEDIUM_PAIRS = 300_000
LARGE_PAIRS = 3_000_000

_COMMON = dict(subword_sampling=0.0, validation_bleu_sentences=500)
RECIPES = {
    "closed-vocabulary": dict(
        _COMMON,
        preset="tiny",
        vocabulary_size=400,
        epochs=5,
        max_tokens=2048,
        warmup_steps=400,
        learning_rate_scale=1.0,
        cooldown_epochs=0,
        mixed_precision="float32",
        lowercase=False,
        validation_bleu_every=1,
        validation_bleu_sentences=300,
        average=[3],
        beam_size=4,
        alpha=0.6,
        model_overrides={"num_encoder_layers": 3, "num_decoder_layers": 3, "dropout": 0.1},
    ),
    # Chosen on Multi30k's validation split (docs/experiments/multi30k.md): bfloat16 with 48
    # epochs, the last 16 a linear cool-down (runs L1, LD0, LB1); batches of 2,048 tokens
    # with 4,000 warm-up steps (B1 against LB0); lowercasing with a recaser (+1.2, L1);
    # alpha 1.5 for lowercased models; pre-LN, as post-LN stalls at this peak (4.9e-3).
    "small": dict(
        _COMMON,
        preset="tiny",
        vocabulary_size=4000,
        epochs=48,
        max_tokens=2048,
        warmup_steps=4000,
        learning_rate_scale=2.5,
        cooldown_epochs=16,
        mixed_precision="mixed_bfloat16",
        lowercase=True,
        validation_bleu_every=4,
        average=[10],
        beam_size=5,
        alpha=1.5,
        model_overrides={"norm_first": True},
    ),
    "medium": dict(
        _COMMON,
        preset="small",
        vocabulary_size=8000,
        epochs=20,
        max_tokens=4096,
        warmup_steps=4000,
        learning_rate_scale=1.0,
        cooldown_epochs=5,
        mixed_precision="mixed_bfloat16",
        lowercase=False,
        validation_bleu_every=2,
        average=[5],
        beam_size=4,
        alpha=1.0,
        model_overrides={"norm_first": True},
    ),
    # The paper's base model and schedule (100,000 steps), trained by steps on a stream.
    "large": dict(
        _COMMON,
        preset="base",
        vocabulary_size=32000,
        train_steps=100_000,
        save_every_steps=2_000,
        max_tokens=4096,
        warmup_steps=4000,
        learning_rate_scale=1.0,
        cooldown_epochs=0,
        mixed_precision="float32",
        lowercase=False,
        validation_bleu_every=1,
        average=[5],
        beam_size=4,
        alpha=0.6,
        model_overrides={},
        keep_checkpoints=10,
    ),
}
# Every setting that some recipe sets (and so a user may give instead).
RECIPE_SETTINGS = tuple(sorted({name for recipe in RECIPES.values() for name in recipe}))
# The recipes that the corpora known by name had before the rule existed: an older run's
# `config.json` (with no `recipe`) means these.
LEGACY_RECIPES = {"generated": "closed-vocabulary", "multi30k": "small", "shards": "large"}


@dataclasses.dataclass(frozen=True)
class CorpusStats:
    """What the rule reads of a training corpus.

    Attributes:
        pairs: training pairs (after the held-out splits and overlaps are removed).
        words: distinct lowercased words of both sides (of a streamed corpus's sample).
        streamed: whether the corpus is streamed from its files rather than held in memory.
    """

    pairs: int
    words: int
    streamed: bool = False


def count_words(sources: list[str], targets: list[str]) -> int:
    """Distinct lowercased, whitespace-separated words of both sides."""
    return len({word for text in (*sources, *targets) for word in text.lower().split()})


def choose_recipe(stats: CorpusStats) -> str:
    """The recipe for a corpus (see the module's table).

    Example:

    >>> choose_recipe(CorpusStats(pairs=29_000, words=38_000))
    'small'
    >>> choose_recipe(CorpusStats(pairs=20_000, words=1_500))
    'closed-vocabulary'
    """
    if stats.streamed or stats.pairs >= LARGE_PAIRS:
        return "large"
    if stats.pairs >= MEDIUM_PAIRS:
        return "medium"
    if stats.words < CLOSED_VOCABULARY_WORDS:
        return "closed-vocabulary"
    return "small"


def recipe_settings(name: str, stats: CorpusStats | None = None) -> dict:
    """The settings of recipe `name` for a corpus: the vocabulary follows its words (a
    third of them, in hundreds, at least 100, at most the recipe's) and the
    closed-vocabulary recipe's epochs its pairs (100,000 pairs' worth, 5 to 100).

    Raises:
        ValueError: for an unknown recipe.
    """
    if name not in RECIPES:
        raise ValueError(f"recipe must be one of {list(RECIPE_NAMES)}; got recipe={name!r}")
    settings = {**RECIPES[name], "model_overrides": dict(RECIPES[name]["model_overrides"])}
    if stats is None:
        return settings
    if stats.words:
        words_vocabulary = max(100, int(round(stats.words / 3, -2)))
        settings["vocabulary_size"] = min(settings["vocabulary_size"], words_vocabulary)
    if name == "closed-vocabulary" and stats.pairs:
        settings["epochs"] = min(100, max(5, math.ceil(100_000 / stats.pairs)))
    return settings


def bfloat16_is_fast() -> bool:
    """Whether bfloat16 trains fast here: a GPU is visible (when TensorFlow is loaded), or
    the CPU has bfloat16 instructions, or it cannot tell. Where it is slow, a recipe's
    `mixed_bfloat16` becomes `float32` (measured on a CPU without them, Multi30k's first
    epochs took about 3 times as long in bfloat16)."""
    import sys

    from keras_attention.runs.cpu_features import cpu_has_bfloat16

    tensorflow = sys.modules.get("tensorflow")
    if tensorflow is not None and tensorflow.config.list_physical_devices("GPU"):
        return True
    return cpu_has_bfloat16() is not False


def for_this_machine(settings: dict) -> dict:
    """`settings` with bfloat16 replaced by float32 where it is slow (`bfloat16_is_fast`)."""
    if settings.get("mixed_precision") == "mixed_bfloat16" and not bfloat16_is_fast():
        return {**settings, "mixed_precision": "float32"}
    return settings


def _round_steps(train_steps: int, preferred: int) -> int:
    """The steps of a round for `train_steps`: the largest divisor of `train_steps` that is at
    most `preferred` (rounds must be whole)."""
    if not isinstance(train_steps, int) or train_steps < 1:
        return preferred  # left for `TrainConfig.validate` to name
    return next(d for d in range(min(train_steps, preferred), 0, -1) if train_steps % d == 0)


def follow_schedule(settings: dict, given: dict) -> dict:
    """`settings` (a recipe's) with `given` (the user's) on top, and the settings that depend
    on the schedule's length following a given `epochs` or `train_steps`: the cool-down and
    warm-up keep their share of a shorter schedule, unless given, and the learning-rate
    scale follows the warm-up so that the peak learning rate stays the recipe's; the
    validation interval is at most the schedule; averages of more checkpoints than the
    schedule makes are dropped; given steps are saved in whole rounds of at most the
    recipe's steps."""
    merged = {**settings, **given}
    if "train_steps" in given:
        merged.pop("epochs", None)  # rounds of steps replace the recipe's epochs
    elif "epochs" in given and "train_steps" in settings:
        merged.pop("train_steps", None)
        merged.pop("save_every_steps", None)
    every = settings.get("save_every_steps")
    if "train_steps" in given and "save_every_steps" not in given and every is not None:
        merged["save_every_steps"] = _round_steps(given["train_steps"], every)
    length = "train_steps" if "train_steps" in given else "epochs"
    if length not in given or length not in settings:
        return merged
    share = given[length] / settings[length]
    if share < 1:
        if "warmup_steps" not in given:
            warmup = max(1, round(settings["warmup_steps"] * share))
            merged["warmup_steps"] = warmup
            if "learning_rate_scale" not in given:
                # The paper's schedule peaks at scale / sqrt(d_model * warm-up): a shorter
                # warm-up keeps the recipe's peak, not a higher one.
                ratio = math.sqrt(warmup / settings["warmup_steps"])
                merged["learning_rate_scale"] = round(settings["learning_rate_scale"] * ratio, 6)
        if "cooldown_epochs" not in given and length == "epochs":
            merged["cooldown_epochs"] = round(settings["cooldown_epochs"] * share)
    if length == "epochs":
        epochs = given["epochs"]
        if "validation_bleu_every" not in given and merged["validation_bleu_every"] > epochs:
            merged["validation_bleu_every"] = epochs
        if "average" not in given:
            merged["average"] = [k for k in merged["average"] if k <= epochs]
    return merged
