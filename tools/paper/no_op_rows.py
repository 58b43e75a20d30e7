"""Rows that would change nothing: a variation whose every model argument already has that
value in the base recipe (for example `norm_first=True` on a pre-LN base), which would only
train the base again under another name.

The base's arguments are read from a finished base run's `model.keras` (the model's full
configuration: the preset's sizes with the recipe's and the command's overrides applied).

Example:

>>> from tools.paper.variations import Variation
>>> row = Variation("pre-LN", "extra", {"norm_first": True})
>>> changes_nothing(row, {"norm_first": True, "d_model": 128})
'changes nothing: the base recipe already has norm_first=true'
>>> changes_nothing(row, {"norm_first": False}) is None
True
"""

import json
import zipfile
from pathlib import Path

from tools.paper.variations import Variation


def base_model_config(run_dir: Path) -> dict | None:
    """The model arguments of the finished run in `run_dir` (its `model.keras`'s config);
    `None` if the folder holds no readable saved model (a records folder keeps none)."""
    try:
        with zipfile.ZipFile(run_dir / "model.keras") as archive:
            return json.loads(archive.read("config.json"))["config"]
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None


def changes_nothing(variation: Variation, base_config: dict | None) -> str | None:
    """The error that a row changes nothing in a base of `base_config`, `None` if it changes
    something (or its training options may: they are not compared, nor is an unknown base)."""
    if base_config is None or variation.train_args or not variation.overrides:
        return None
    overrides = variation.overrides.items()
    if any(base_config.get(name, object()) != value for name, value in overrides):
        return None
    settings = ", ".join(f"{name}={json.dumps(value)}" for name, value in overrides)
    return f"changes nothing: the base recipe already has {settings}"
