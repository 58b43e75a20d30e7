"""The sweep's table (Markdown and JSON) and figure: each row's validation scores beside the
base row's seeds, its delta, and whether the delta is outside the base's spread.

A row's scores are those of its last weights (every row has had the same updates) on the
validation split: sacreBLEU (cased, 13a), the Moses-tokenized BLEU of the published Multi30k
figures, and the perplexity per word-piece (the exponent of the cross-entropy without label
smoothing, as the paper's Table 3 reports it). The base row's spread is the range (max - min)
of its seeds; a row whose score falls inside the base's range is reported as "within noise",
not as an effect. The paper's direction is compared only for effects outside the noise.
"""

import csv
import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path

from tools.paper.outputs import write_outputs
from tools.paper.sweep import TIME_FILE, RowResult
from tools.paper.variations import BASE

METRICS = ("bleu", "bleu_tokenized", "perplexity")
HIGHER_IS_BETTER = {"bleu": True, "bleu_tokenized": True, "perplexity": False}


@dataclasses.dataclass
class RowScores:
    """A finished row's validation scores, and its training time in minutes (`None` when the
    row's folder holds no time; only the last part's when the row was `resumed`)."""

    bleu: float
    bleu_tokenized: float
    perplexity: float
    minutes: float | None
    resumed: bool = False


def read_scores(run_dir: Path) -> RowScores:
    """The validation scores of a finished run folder's last weights."""
    summary = json.loads((run_dir / "bleu.json").read_text())
    last = summary["validation"]["last"]
    with (run_dir / "training_log.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    perplexity = float(rows[-1]["val_perplexity"])
    time_file = run_dir / TIME_FILE
    timing = json.loads(time_file.read_text()) if time_file.exists() else {}
    minutes = timing["seconds"] / 60 if timing else None
    return RowScores(
        last["bleu"], last["bleu_tokenized"], perplexity, minutes, timing.get("resumed", False)
    )


def _verdict(value: float, low: float, high: float, metric: str) -> int:
    """+1 better than every base seed, -1 worse than every one, 0 within their range."""
    if low <= value <= high:
        return 0
    better = value > high if HIGHER_IS_BETTER[metric] else value < low
    return 1 if better else -1


WORDS = {1: "better", 0: "within noise", -1: "worse"}


def build_table(results: Sequence[RowResult]) -> dict:
    """The table as data: the base's seeds and spread, then each row's scores and deltas."""
    base_scores = [read_scores(r.run_dir) for r in results
                   if r.variation.name == BASE.name and r.status == "done"]  # fmt: skip
    if not base_scores:
        raise ValueError("no finished base row: the table needs the base's seeds")
    base = {}
    for metric in METRICS:
        values = [getattr(scores, metric) for scores in base_scores]
        base[metric] = {"mean": sum(values) / len(values), "min": min(values),
                        "max": max(values), "spread": max(values) - min(values),
                        "seeds": values}  # fmt: skip
    rows = []
    for result in results:
        variation = result.variation
        if variation.name == BASE.name:
            continue
        row = {"name": variation.name, "group": variation.group, "seed": result.seed,
               "overrides": variation.overrides, "train_args": list(variation.train_args),
               "paper": variation.paper, "paper_direction": variation.paper_direction,
               "status": result.status}  # fmt: skip
        if result.status != "done":
            row["error"] = result.error or "not trained yet"
            rows.append(row)
            continue
        scores = read_scores(result.run_dir)
        row["minutes"], row["resumed"] = scores.minutes, scores.resumed
        for metric in METRICS:
            value = getattr(scores, metric)
            stats = base[metric]
            row[metric] = value
            row[f"{metric}_delta"] = value - stats["mean"]
            row[f"{metric}_verdict"] = _verdict(value, stats["min"], stats["max"], metric)
        ours, theirs = row["bleu_verdict"], variation.paper_direction
        row["agrees_with_paper"] = None if ours == 0 or theirs is None else ours == theirs
        rows.append(row)
    minutes = [scores.minutes for scores in base_scores]
    resumed = [scores.resumed for scores in base_scores]
    return {"base": base, "base_minutes": minutes, "base_resumed": resumed, "rows": rows}


def _minutes(minutes: float | None, resumed: bool = False) -> str:
    """A row's minutes; a resumed row's say that they are only its last part's."""
    if minutes is None:
        return "-"
    return f"{minutes:.1f} (resumed: this part)" if resumed else f"{minutes:.1f}"


def _signed(value: float) -> str:
    return f"{value:+.2f}"


def format_markdown(table: dict) -> str:
    """The table as Markdown: the base row (mean, range over its seeds), then a row each."""
    base = table["base"]
    seeds = len(base["bleu"]["seeds"])
    lines = [
        f"Base: BLEU {base['bleu']['mean']:.2f} (seeds {base['bleu']['min']:.2f} to "
        f"{base['bleu']['max']:.2f}, spread {base['bleu']['spread']:.2f}), Moses-tokenized "
        f"{base['bleu_tokenized']['mean']:.2f} (spread {base['bleu_tokenized']['spread']:.2f}), "
        f"perplexity {base['perplexity']['mean']:.2f} (spread "
        f"{base['perplexity']['spread']:.2f}); {seeds} seeds, minutes each: "
        f"{', '.join(map(_minutes, table['base_minutes'], table['base_resumed']))}.",
        "",
        "| row | BLEU | Δ (base spread) | tokenized BLEU | Δ | perplexity | Δ | verdict (BLEU) "
        "| paper | same direction | minutes |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in table["rows"]:
        if row["status"] != "done":
            lines.append(f"| {row['name']} | {row['status']}: {row['error']} | | | | | | | "
                         f"{row['paper']} | | |")  # fmt: skip
            continue
        agrees = {None: "-", True: "yes", False: "no"}[row["agrees_with_paper"]]
        lines.append(
            f"| {row['name']} | {row['bleu']:.2f} | {_signed(row['bleu_delta'])} "
            f"(±{base['bleu']['spread'] / 2:.2f}) | {row['bleu_tokenized']:.2f} | "
            f"{_signed(row['bleu_tokenized_delta'])} | {row['perplexity']:.2f} | "
            f"{_signed(row['perplexity_delta'])} | {WORDS[row['bleu_verdict']]} | "
            f"{row['paper']} | {agrees} | {_minutes(row['minutes'], row['resumed'])} |"
        )
    return "\n".join(lines) + "\n"


def plot(table: dict, path: Path) -> None:
    """Each row's BLEU delta as a bar, the base's seed range shaded around 0."""
    import matplotlib.figure

    rows = [row for row in table["rows"] if row["status"] == "done"]
    base = table["base"]["bleu"]
    figure = matplotlib.figure.Figure(figsize=(7, 0.35 * len(rows) + 1.5))
    axes = figure.add_subplot()
    positions = range(len(rows))
    colours = ["tab:green" if row["bleu_verdict"] > 0 else "tab:red" if row["bleu_verdict"] < 0
               else "tab:gray" for row in rows]  # fmt: skip
    axes.barh(list(positions), [row["bleu_delta"] for row in rows], color=colours)
    axes.axvspan(base["min"] - base["mean"], base["max"] - base["mean"], color="0.85",
                 label="base seeds' range", zorder=0)  # fmt: skip
    axes.set_yticks(list(positions), [row["name"] for row in rows])
    axes.invert_yaxis()
    axes.axvline(0, color="black", linewidth=0.8)
    axes.set_xlabel("validation BLEU minus the base's mean")
    axes.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def write_table(results: Sequence[RowResult], output_dir: str | os.PathLike) -> dict:
    """Writes `ablation.md`, `ablation.json` and `ablation.png` into `output_dir` (each
    written whole, then moved into place); returns the table."""
    table = build_table(results)
    texts = {
        "ablation.md": format_markdown(table),
        "ablation.json": json.dumps(table, indent=2) + "\n",
    }
    write_outputs(output_dir, texts, ("ablation.png", lambda path: plot(table, path)))
    return table
