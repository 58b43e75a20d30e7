"""The result lines a run prints and logs, for people: scores and settings in words, not
Python dicts.

The full figures stay in the run's JSON files (`config.json`, `bleu.json`,
`test_metrics.json`); these lines give the few that a reader looks for, rounded.
"""

import os
from collections.abc import Mapping

# Score name -> how a line names it, in the order the lines give them.
SCORE_LABELS = {
    "bleu": "BLEU",
    "chrf": "chrF",
    "bleu_lowercase": "BLEU lowercased",
    "bleu_tokenized": "BLEU tokenized",
}


def count_text(count: int, unit: str, thousands: bool = True) -> str:
    """`count` with `unit`, singular for one, plural (`unit` + "s") otherwise; the count's
    thousands separated by commas unless `thousands` is false (for a setting written as the
    option takes it).

    Example:

    >>> count_text(1, "epoch"), count_text(0, "epoch"), count_text(20000, "pair")
    ('1 epoch', '0 epochs', '20,000 pairs')
    >>> count_text(4000, "subword", thousands=False)
    '4000 subwords'
    """
    shown = f"{count:,}" if thousands else str(count)
    return f"{shown} {unit}" if count == 1 else f"{shown} {unit}s"


def significant(value: float, digits: int = 3) -> str:
    """`value` rounded to `digits` significant digits, as Python writes that float.

    Example:

    >>> significant(0.510820), significant(2.5), significant(1.0), significant(0.000123456)
    ('0.511', '2.5', '1.0', '0.000123')
    """
    return str(float(f"{float(value):.{digits}g}"))


def scores_text(scores: Mapping[str, float | None]) -> str:
    """Scores as `BLEU 91.75, chrF 95.10, ...` (the known scores first, `n/a` for a missing
    value).

    Example:

    >>> scores_text({"bleu": 91.749, "chrf": 95.1, "bleu_lowercase": 92.0})
    'BLEU 91.75, chrF 95.10, BLEU lowercased 92.00'
    """
    names = [name for name in SCORE_LABELS if name in scores]
    names += [name for name in scores if name not in SCORE_LABELS]
    parts = []
    for name in names:
        value = scores[name]
        shown = "n/a" if value is None else f"{float(value):.2f}"
        parts.append(f"{SCORE_LABELS.get(name, name)} {shown}")
    return ", ".join(parts)


def validation_line(name: str, scores: Mapping[str, float | None]) -> str:
    """The line of one candidate's validation scores.

    Example:

    >>> validation_line("last", {"bleu": 91.749, "chrf": 95.1})
    'validation (last weights): BLEU 91.75, chrF 95.10'
    """
    return f"validation ({name} weights): {scores_text(scores)}"


def final_weights_line(name: str, validation: Mapping[str, Mapping[str, float | None]]) -> str:
    """The line naming the weights chosen, with their validation BLEU and chrF.

    Example:

    >>> final_weights_line("best_5", {"best_5": {"bleu": 92.1, "chrf": 95.3, "bleu_tokenized": 1}})
    'final weights: best_5 (validation BLEU 92.10, chrF 95.30)'
    """
    chosen = {key: value for key, value in validation[name].items() if key in ("bleu", "chrf")}
    return f"final weights: {name} (validation {scores_text(chosen)})"


def metrics_text(metrics: Mapping[str, float | None]) -> str:
    """Metrics as `loss 1.2346, accuracy 0.5000` (4 decimals, `n/a` for a missing value).

    Example:

    >>> metrics_text({"loss": 1.23456, "accuracy": None})
    'loss 1.2346, accuracy n/a'
    """
    return ", ".join(
        f"{name} {'n/a' if value is None else f'{float(value):.4f}'}"
        for name, value in metrics.items()
    )


def config_line(config: Mapping[str, object]) -> str:
    """A run's main settings on one line; the others are in its `config.json`.

    Args:
        config: the run's settings (`dataclasses.asdict` of its `TrainConfig`).

    Example:

    >>> config_line({"output_dir": "runs/a", "dataset": "generated", "train": None,
    ...              "preset": "tiny", "epochs": 3, "train_steps": None, "max_tokens": 4096,
    ...              "vocabulary_size": 800, "beam_size": 4, "alpha": 0.6})
    'config: generated corpus, preset tiny, 3 epochs, 4096 tokens a batch, vocabulary 800, beam 4, alpha 0.6 (all settings: runs/a/config.json, or --verbose)'
    """  # noqa: E501 (a doctest's output)
    train = config.get("train")
    parts = [f"{config.get('dataset') or 'generated'} corpus" if not train else "your corpus"]
    if config.get("preset") is not None:
        parts.append(f"preset {config['preset']}")
    if config.get("train_steps"):
        parts.append(count_text(config["train_steps"], "step", thousands=False))
    elif config.get("epochs") is not None:
        parts.append(count_text(config["epochs"], "epoch"))
    labels = (("max_tokens", "{} tokens a batch"), ("vocabulary_size", "vocabulary {}"),
              ("beam_size", "beam {}"), ("alpha", "alpha {}"))  # fmt: skip
    parts += [label.format(config[key]) for key, label in labels if config.get(key) is not None]
    where = os.path.join(str(config.get("output_dir")), "config.json")
    return f"config: {', '.join(parts)} (all settings: {where}, or --verbose)"
