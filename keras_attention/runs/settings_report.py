"""The settings a run chose, one short line each, for the start of a run: what the corpus is,
where its validation and test splits come from, which recipe its size picked, and for each
main setting where its value came from: given, the recipe's, the recipe's for this corpus or
this machine, or derived from a given `--epochs` or `--train-steps`.
"""

from keras_attention.runs import fine_tune
from keras_attention.runs.corpus import dropped_text
from keras_attention.runs.recipes import RECIPES, for_this_machine, recipe_settings
from keras_attention.runs.report_lines import count_text, significant

# The settings shown: name, label, and the unit of a count (`None`: the value as it is).
_SHOWN = (
    ("preset", "preset", None),
    ("vocabulary_size", "vocabulary", "subword"),
    ("max_tokens", "batch", "token"),
    ("epochs", "epochs", None),
    ("train_steps", "steps", None),
    ("warmup_steps", "warm-up", "update"),
    ("cooldown_epochs", "cool-down", "epoch"),
    ("learning_rate_scale", "learning-rate scale", None),
    ("mixed_precision", "precision", None),
    ("lowercase", "lowercase", None),
    ("beam_size", "beam", None),
    ("alpha", "length penalty", None),
)
# The shown settings that a given `epochs` or `train_steps` scales (`follow_schedule`).
_SCHEDULE_FOLLOWERS = ("warmup_steps", "cooldown_epochs", "learning_rate_scale")
# Where a named corpus's own validation and test splits come from.
_OWN_SPLITS = {
    "generated": "the generated corpus's own split",
    "multi30k": "Multi30k's own split",
    "shards": "the {} files in the corpus folder",
}


def _shown(name: str, value, unit: str | None) -> str:
    """A setting's value as the line shows it."""
    if name == "learning_rate_scale":
        return significant(value)
    return str(value) if unit is None else count_text(value, unit, thousands=False)


def split_origin(split: str, given, config, run_corpus) -> str:
    """Where a run's validation (`split="val"`) or test (`"test"`) split comes from.

    Args:
        split: `"val"` or `"test"`.
        given: the `TrainConfig` as given (unset settings `None`).
        config: the same, resolved.
        run_corpus: its `RunCorpus`.

    Returns:
        `"held out of the training pairs"`, `"given"` (files of `--valid` or `--test`), or
        the named corpus's own split.
    """
    if split in run_corpus.held_out:
        return "held out of the training pairs"
    if getattr(given, "valid" if split == "val" else "test") is not None:
        return "given"
    own = _OWN_SPLITS.get(config.dataset, f"the {config.dataset} corpus's own split")
    return own.format("val.*" if split == "val" else "test.*")


def _length(given) -> tuple[str, int, str] | None:
    """The given length of the schedule as (option, value, setting); `None` if none was
    given."""
    if given.train_steps is not None:
        return "--train-steps", given.train_steps, "train_steps"
    if given.epochs is not None:
        return "--epochs", given.epochs, "epochs"
    return None


def setting_origin(name: str, given, config, stats=None) -> str:
    """Where the resolved value of setting `name` came from, in words.

    Args:
        name: a `TrainConfig` field that the recipes set.
        given: the `TrainConfig` as given (unset settings `None`).
        config: the same, resolved.
        stats: the corpus's `CorpusStats`, which some recipe settings follow (`None`: the
            recipe's own values).

    Returns:
        `"given"`; `"derived from --epochs N: ..."` (or `--train-steps`) for a setting that
        follows the schedule's length; `"recipe"`, `"recipe, for the corpus's ..."` where
        the recipe's value follows the corpus's size; for the precision, what replaced the
        recipe's; else `"recipe"`.
    """
    if getattr(given, name, None) is not None:
        return "given"
    value = getattr(config, name)
    recipe = recipe_settings(config.recipe, stats)
    base = RECIPES[config.recipe].get(name)
    length = _length(given)
    if name in _SCHEDULE_FOLLOWERS and length is not None and value != recipe.get(name):
        option, count, field = length
        scale = f"{count}/{recipe.get(field)}"
        if name == "learning_rate_scale":
            return (
                f"derived from {option} {count} with the warm-up: the recipe's "
                f"{significant(recipe[name])}, scaled to keep its peak learning rate"
            )
        return f"derived from {option} {count}: the recipe's {recipe[name]} scaled by {scale}"
    if name == "mixed_precision":
        here = for_this_machine(recipe)[name]
        if value != here:  # a resumed run keeps the precision it started with
            return "kept from the run's start"
        if here != recipe[name]:
            return f"the recipe's {recipe[name]} is slow on this machine"
        return "recipe"
    if stats is not None and recipe.get(name) != base and value == recipe.get(name):
        if name == "vocabulary_size":
            return f"recipe, for the corpus's {stats.words:,} distinct words"
        if name == "epochs":
            return f"recipe, for the corpus's {count_text(stats.pairs, 'training pair')}"
    return "recipe"


def settings_lines(given, config, run_corpus) -> list[str]:
    """The lines that describe a run's corpus and settings.

    Args:
        given: the `TrainConfig` as given (unset settings `None`).
        config: the same, resolved.
        run_corpus: its `RunCorpus`.
    """
    stats = run_corpus.stats
    languages = f"{config.source_lang or '?'} -> {config.target_lang or '?'}"
    streamed = ", streamed" if stats.streamed else ""
    lines = [
        f"corpus: {count_text(stats.pairs, 'training pair')}, "
        f"{count_text(stats.words, 'distinct word')}, {languages}{streamed}"
    ]
    for split in ("val", "test"):
        count = len(run_corpus.corpus[split][0])
        name = "validation split" if split == "val" else "test split"
        how = split_origin(split, given, config, run_corpus)
        lines.append(f"{name}: {count_text(count, 'pair')}, {how}")
    if run_corpus.removed or run_corpus.blank:
        dropped = dropped_text(run_corpus.removed or 0, run_corpus.blank or 0)
        lines.append(f"left out of training: {dropped}")
    if config.init_from is not None:
        lines.append(f"recipe: {config.recipe} (from {config.init_from})")
    else:
        recipe_origin = "given" if given.recipe is not None else "chosen by the corpus's size"
        lines.append(f"recipe: {config.recipe} ({recipe_origin})")
    for name, label, unit in _SHOWN:
        value = getattr(config, name)
        if value is None or (name == "epochs" and config.train_steps is not None):
            continue
        if config.init_from is not None:
            origin = fine_tuning_origin(name, given, config)
        else:
            origin = setting_origin(name, given, config, stats)
        lines.append(f"{label}: {_shown(name, value, unit)} ({origin})")
    if config.init_from is not None:
        for name, label in (("patience", "patience"), ("lora_rank", "LoRA rank")):
            value = getattr(config, name)
            if value is not None:
                origin = "given" if getattr(given, name) is not None else "fine-tuning recipe"
                lines.append(f"{label}: {value} ({origin})")
    return lines


def fine_tuning_origin(name: str, given, config) -> str:
    """Where a fine-tuned run's setting came from: given, its parent run, or the
    fine-tuning recipe (`keras_attention.runs.fine_tune`)."""
    if getattr(given, name, None) is not None:
        return "given"
    if name in fine_tune.INHERITED:
        return f"from {config.init_from}"
    length = _length(given)
    if name in _SCHEDULE_FOLLOWERS and length is not None:
        return f"fine-tuning recipe, derived from {length[0]} {length[1]}"
    return "fine-tuning recipe"
