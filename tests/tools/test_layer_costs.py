"""Table 1 measured (`tools/ablate.py costs`): the FLOPs counted by hand, and a tiny run's
table and figure (the timings themselves are measured in docs/paper.md, not here)."""

import json
from pathlib import Path

import pytest

from tests.run_helpers import main_error
from tools.paper.layer_costs import TABLE_1, flops, measure, write_costs


def test_self_attention_is_cheaper_than_a_recurrent_layer_while_n_is_below_about_d():
    d = 64
    assert flops("self-attention", d // 2, d, 3, 4) < flops("recurrent (LSTM)", d // 2, d, 3, 4)
    assert flops("self-attention", 4 * d, d, 3, 4) > flops("recurrent (LSTM)", 4 * d, d, 3, 4)
    # 8 n d^2 + 4 n^2 d against 16 n d^2: equal at n = 2d.
    assert flops("self-attention", 2 * d, d, 3, 4) == flops("recurrent (LSTM)", 2 * d, d, 3, 4)


@pytest.mark.parametrize(
    ("layer", "want"),
    [
        ("self-attention", 8 * 10 * 16**2 + 4 * 10**2 * 16),
        ("recurrent (LSTM)", 16 * 10 * 16**2),
        ("convolution", 2 * 3 * 10 * 16**2),
        ("restricted self-attention", 8 * 10 * 16**2 + 4 * 10 * 9 * 16),
    ],
)
def test_flops_by_hand(layer: str, want: int):
    assert flops(layer, 10, 16, kernel_size=3, radius=4) == want


def test_a_tiny_measurement_writes_the_table_and_the_figure(tmp_path: Path):
    rows = measure(lengths=(4, 8), d_model=8, heads=2, repeats=1)
    assert {(row["layer"], row["n"]) for row in rows} == {
        (name, n) for name in TABLE_1 for n in (4, 8)
    }
    assert all(row["milliseconds"] > 0 and row["d"] == 8 for row in rows)
    write_costs(rows, tmp_path)
    assert json.loads((tmp_path / "layer_costs.json").read_text()) == rows
    markdown = (tmp_path / "layer_costs.md").read_text()
    assert "| 8 |" in markdown and "| recurrent (LSTM) | O(n d^2) | O(n) | O(n) |" in markdown
    assert (tmp_path / "layer_costs.png").stat().st_size > 1000
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "layer_costs.json", "layer_costs.md", "layer_costs.png"
    ]  # fmt: skip


def test_a_bad_length_is_named_in_one_line(tmp_path: Path):
    error = main_error("ablate", "costs", "--output", tmp_path, "--lengths", "0")
    assert "--lengths" in error
