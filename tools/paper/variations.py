"""The named variations of the base recipe: Table 3's rows (A)-(E), adapted to a small base,
and the rows that test the paper's other claims.

A variation is what it changes in `tools/train.py`'s command: model arguments (`--override
NAME=JSON`) and training options (e.g. `--label-smoothing`). The base recipe is whatever the
sweep is given; the rows below assume the `tiny` preset's sizes (4 layers a side, `d_model`
128, 4 heads, `d_ff` 256), so that each row is the paper's change at a quarter of its width:
the paper's base has `d_model` 512, 8 heads (`d_k` 64), `d_ff` 2048.

Example:

>>> [variation.name for variation in select(["base", "A"])][:3]
['base', 'A heads=1', 'A heads=2']
"""

import dataclasses
import re
from collections.abc import Sequence


@dataclasses.dataclass(frozen=True)
class Variation:
    """One row of the sweep.

    Attributes:
        name: the row's name in the table (its group letter first).
        group: "base", the paper's row letter "A"-"E", or "extra" (the paper's other claims).
        overrides: model arguments changed (`--override NAME=JSON`).
        train_args: training options changed, as command-line words.
        paper: what the paper reports for this change (its Table 3 row or section), for the
            comparison of directions.
        paper_direction: the sign of the paper's effect on BLEU: -1 worse, 0 about the same
            (within 0.2 BLEU), +1 better; `None` where the paper reports no figure.
    """

    name: str
    group: str
    overrides: dict = dataclasses.field(default_factory=dict)
    train_args: tuple[str, ...] = ()
    paper: str = ""
    paper_direction: int | None = None

    def command_words(self) -> list[str]:
        """The words this variation adds to a `tools/train.py` command."""
        words = []
        for name, value in self.overrides.items():
            words += ["--override", f"{name}={_json(value)}"]
        return words + list(self.train_args)


def _json(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


BASE = Variation("base", "base", paper="base: 25.8 BLEU, perplexity 4.92 (newstest2013)")

VARIATIONS = (
    BASE,
    # (A) heads at constant computation: d_k = d_v = d_model / h.
    Variation(
        "A heads=1",
        "A",
        {"num_heads": 1},
        paper="h=1: 24.9 (-0.9), perplexity 5.29",
        paper_direction=-1,
    ),
    Variation(
        "A heads=2",
        "A",
        {"num_heads": 2},
        paper="h=4: 25.5 (-0.3), perplexity 5.00",
        paper_direction=-1,
    ),
    Variation(
        "A heads=8",
        "A",
        {"num_heads": 8},
        paper="h=16: 25.8 (0.0), perplexity 4.91",
        paper_direction=0,
    ),
    Variation(
        "A heads=16",
        "A",
        {"num_heads": 16},
        paper="h=32: 25.4 (-0.4), perplexity 5.01",
        paper_direction=-1,
    ),
    # (B) a smaller attention key size at 4 heads (the base's d_k is 32).
    Variation(
        "B key_dim=16",
        "B",
        {"key_dim": 16},
        paper="d_k=32: 25.4 (-0.4), perplexity 5.01",
        paper_direction=-1,
    ),
    Variation(
        "B key_dim=8",
        "B",
        {"key_dim": 8},
        paper="d_k=16: 25.1 (-0.7), perplexity 5.16",
        paper_direction=-1,
    ),
    # (C) depth, width and the inner size.
    Variation(
        "C layers=2",
        "C",
        {"num_encoder_layers": 2, "num_decoder_layers": 2},
        paper="N=4: 25.3 (-0.5); N=2: 23.7 (-2.1)",
        paper_direction=-1,
    ),
    Variation(
        "C layers=6",
        "C",
        {"num_encoder_layers": 6, "num_decoder_layers": 6},
        paper="N=8: 25.5 (-0.3), perplexity 4.88",
        paper_direction=-1,
    ),
    Variation(
        "C d_model=64",
        "C",
        {"d_model": 64},
        paper="d_model=256: 24.5 (-1.3), perplexity 5.75",
        paper_direction=-1,
    ),
    Variation(
        "C d_model=256",
        "C",
        {"d_model": 256},
        paper="d_model=1024: 26.0 (+0.2), perplexity 4.66",
        paper_direction=1,
    ),
    Variation(
        "C d_ff=128",
        "C",
        {"intermediate_dim": 128},
        paper="d_ff=1024: 25.4 (-0.4), perplexity 5.12",
        paper_direction=-1,
    ),
    Variation(
        "C d_ff=512",
        "C",
        {"intermediate_dim": 512},
        paper="d_ff=4096: 26.2 (+0.4), perplexity 4.75",
        paper_direction=1,
    ),
    # (D) residual dropout and label smoothing (the tiny preset's dropout is 0.3).
    Variation(
        "D dropout=0",
        "D",
        {"dropout": 0.0},
        paper="P_drop=0.0: 24.6 (-1.2), perplexity 5.77",
        paper_direction=-1,
    ),
    Variation(
        "D dropout=0.5",
        "D",
        {"dropout": 0.5},
        paper="P_drop=0.2: 25.5 (-0.3), perplexity 4.95",
        paper_direction=-1,
    ),
    Variation(
        "D smoothing=0",
        "D",
        train_args=("--label-smoothing", "0"),
        paper="eps_ls=0.0: 25.3 (-0.5), perplexity 4.67 (lower)",
        paper_direction=-1,
    ),
    Variation(
        "D smoothing=0.2",
        "D",
        train_args=("--label-smoothing", "0.2"),
        paper="eps_ls=0.2: 25.7 (-0.1), perplexity 5.47 (higher)",
        paper_direction=0,
    ),
    # (E) learned positional embeddings (more rows than any output a search writes).
    Variation(
        "E learned positions",
        "E",
        {"max_positions": 512},
        paper="learned positions: 25.7 (-0.1), perplexity 4.92",
        paper_direction=0,
    ),
    # The paper's other claims (no figure in the paper).
    Variation(
        "no 1/sqrt(d_k)",
        "extra",
        {"attention_scale": 1.0},
        paper="Section 3.2.1: large dot products push the softmax into small gradients",
    ),
    Variation(
        "no sqrt(d_model) on embeddings",
        "extra",
        {"scale_embeddings": False},
        paper="Section 3.4: embeddings multiplied by sqrt(d_model)",
    ),
    # The Multi30k recipe (`small`) trains pre-LN (its measured choice), so this row is the
    # paper's post-LN; on a post-LN base it changes nothing, and the sweep says so.
    Variation(
        "post-LN",
        "extra",
        {"norm_first": False},
        paper="Section 3.1: post-LN, LayerNorm(x + Sublayer(x)); pre-LN is later practice",
    ),
    Variation(
        "untied embeddings",
        "extra",
        {"share_embeddings": False, "tie_output_embeddings": False},
        paper="Section 3.4: one matrix for both embeddings and the output",
    ),
)

GROUPS = ("base", "A", "B", "C", "D", "E", "extra")


def select(names: Sequence[str]) -> list[Variation]:
    """The variations named, in the order of `VARIATIONS`: a row's name (or its folder name,
    `a-heads-1` for `A heads=1`), or a group ("A", "extra", ...; "all" for every row). The
    base row is always first.

    Raises:
        ValueError: naming the first name that is neither a row nor a group.
    """
    by_name = {variation.name: variation for variation in VARIATIONS}
    by_name.update({slug(variation.name): variation for variation in VARIATIONS})
    wanted = set()
    for name in names:
        if name == "all":
            wanted |= set(by_name)
        elif name in GROUPS:
            wanted |= {v.name for v in VARIATIONS if v.group == name}
        elif name in by_name:
            wanted.add(by_name[name].name)
        else:
            raise ValueError(
                f"unknown variation {name!r}; rows: {', '.join(v.name for v in VARIATIONS)}; "
                f"groups: "
                f"{', '.join(GROUPS)}, all"
            )
    wanted.add(BASE.name)
    return [variation for variation in VARIATIONS if variation.name in wanted]


def slug(name: str) -> str:
    """A row name as a folder name: `"A heads=1"` -> `"a-heads-1"`."""
    return re.sub(r"[^a-z0-9.]+", "-", name.lower()).strip("-")
