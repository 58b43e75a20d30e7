"""The learning curve of a run as a PNG: validation BLEU and loss against wall-clock time."""

import csv
import math
import os
from pathlib import Path

from keras_attention.core.atomic_files import atomic_path


def read_log(path: str | os.PathLike) -> dict[str, list[float]]:
    """The columns of a `training_log.csv` as floats (`NaN` for empty or `NA` cells).

    Raises:
        FileNotFoundError: if the file does not exist.
        ValueError: if it has no rows.
    """
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise ValueError(f"{path} holds no epoch rows")

    def number(text: str | None) -> float:
        try:
            return float(text)
        except (TypeError, ValueError):
            return math.nan

    return {key: [number(row.get(key)) for row in rows] for key in rows[0]}


def plot_learning_curve(log_path: str | os.PathLike, output_path: str | os.PathLike) -> Path:
    """Draws validation BLEU (left axis) and training and validation loss (right axis) against
    wall-clock minutes (the `elapsed_s` column; epochs when it is missing).

    Args:
        log_path: a `training_log.csv` written by a run (`ValidationBleu` adds `val_bleu`
            and `elapsed_s` to it).
        output_path: the PNG to write (atomically).

    Returns:
        The PNG's path.
    """
    # A figure of its own, drawn by the Agg canvas that `savefig` picks for a PNG: not
    # `pyplot`, and not `matplotlib.use("Agg")`, which would switch the whole process's
    # backend (a notebook that trains a run would show no more inline figures).
    from matplotlib.figure import Figure

    log = read_log(log_path)
    if "elapsed_s" in log and not all(math.isnan(v) for v in log["elapsed_s"]):
        x, label = [v / 60 for v in log["elapsed_s"]], "wall-clock time (minutes)"
    else:
        x, label = [e + 1 for e in log["epoch"]], "epoch"
    figure = Figure(figsize=(7, 4), dpi=110)
    bleu_axis = figure.add_subplot()
    bleu = log.get("val_bleu", [math.nan] * len(x))
    points = [(t, b) for t, b in zip(x, bleu, strict=True) if not math.isnan(b)]
    if points:
        times, scores = [t for t, _ in points], [b for _, b in points]
        bleu_axis.plot(times, scores, "o-", color="tab:blue", label="validation BLEU")
    bleu_axis.set_xlabel(label)
    bleu_axis.set_ylabel("validation sacreBLEU", color="tab:blue")
    loss_axis = bleu_axis.twinx()
    for key, style, name in (("loss", "--", "training loss"), ("val_loss", "-", "validation loss")):
        if key in log:
            loss_axis.plot(x, log[key], style, color="tab:red", label=name)
    loss_axis.set_ylabel("loss (label-smoothed)", color="tab:red")
    handles = bleu_axis.get_legend_handles_labels()[0] + loss_axis.get_legend_handles_labels()[0]
    bleu_axis.legend(handles=handles, loc="center right")
    bleu_axis.grid(alpha=0.3)
    figure.tight_layout()
    output_path = Path(output_path)
    with atomic_path(output_path) as tmp:
        figure.savefig(tmp, format="png")
    return output_path
