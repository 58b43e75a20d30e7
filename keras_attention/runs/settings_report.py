"""The settings a run chose, one short line each, for the start of a run: what the corpus is,
which recipe its size picked, and for each main setting whether it was given or the recipe's.
"""

from keras_attention.runs.recipes import RECIPES

# The settings shown, with how to show a value.
_SHOWN = (
    ("preset", "preset", "{}"),
    ("vocabulary_size", "vocabulary", "{} subwords"),
    ("max_tokens", "batch", "{} tokens"),
    ("epochs", "epochs", "{}"),
    ("train_steps", "steps", "{}"),
    ("warmup_steps", "warm-up", "{} updates"),
    ("cooldown_epochs", "cool-down", "{} epochs"),
    ("learning_rate_scale", "learning-rate scale", "{}"),
    ("mixed_precision", "precision", "{}"),
    ("lowercase", "lowercase", "{}"),
    ("beam_size", "beam", "{}"),
    ("alpha", "length penalty", "{}"),
)
_SCHEDULE_FOLLOWERS = ("warmup_steps", "cooldown_epochs", "validation_bleu_every", "average")


def _origin(name: str, given, config) -> str:
    if getattr(given, name, None) is not None:
        return "given"
    recipe = RECIPES[config.recipe]
    length_given = given.epochs is not None or given.train_steps is not None
    if name in _SCHEDULE_FOLLOWERS and length_given and recipe.get(name) != getattr(config, name):
        return "follows the schedule's length"
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
        f"corpus: {stats.pairs:,} training pairs, {stats.words:,} distinct words, "
        f"{languages}{streamed}"
    ]
    for split in ("val", "test"):
        count = len(run_corpus.corpus[split][0])
        name = "validation split" if split == "val" else "test split"
        how = "held out of the training pairs" if split in run_corpus.held_out else "given"
        lines.append(f"{name}: {count:,} pairs, {how}")
    if run_corpus.removed:
        lines.append(
            f"removed from training: {run_corpus.removed:,} pairs whose source is a "
            "validation or test source"
        )
    recipe_origin = "given" if given.recipe is not None else "chosen by the corpus's size"
    lines.append(f"recipe: {config.recipe} ({recipe_origin})")
    for name, label, shown in _SHOWN:
        value = getattr(config, name)
        if value is None or (name == "epochs" and config.train_steps is not None):
            continue
        lines.append(f"{label}: {shown.format(value)} ({_origin(name, given, config)})")
    return lines
