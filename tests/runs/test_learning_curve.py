"""The learning curve's PNG leaves the process's matplotlib alone (its backend, pyplot).

A notebook that trains a run (`train_translator` draws `learning_curve.png`) must go on
showing its own figures inline: the curve is drawn on a `Figure` of its own, without
`matplotlib.use` and without `pyplot`. The PNG itself is tested in `test_selection.py`.
"""

import sys
from pathlib import Path

import matplotlib
import pytest

from keras_attention.runs.learning_curve import plot_learning_curve
from tests.runs.test_selection import write_log


def test_the_curve_neither_switches_the_backend_nor_uses_pyplot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    switched = []
    monkeypatch.setattr(matplotlib, "use", lambda *args, **kwargs: switched.append(args))
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # importing it would fail
    backend = matplotlib.rcParams._get_backend_or_none()
    rows = [{"epoch": e, "loss": 4 - e, "val_loss": 4.5 - e, "val_bleu": 10 * e} for e in range(3)]
    write_log(tmp_path / "training_log.csv", rows)
    path = plot_learning_curve(tmp_path / "training_log.csv", tmp_path / "curve.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert switched == []
    assert matplotlib.rcParams._get_backend_or_none() == backend
