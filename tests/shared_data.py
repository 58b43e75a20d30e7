"""Where the tests find the shared Multi30k copy: `$KERAS_ATTENTION_MULTI30K`, which `.ci/run`
sets (the data lives outside the repository and is never copied into it)."""

import os
from pathlib import Path

import pytest

_FOLDER = os.environ.get("KERAS_ATTENTION_MULTI30K")
MULTI30K_DIR = Path(_FOLDER) if _FOLDER else None
if MULTI30K_DIR is not None and not (MULTI30K_DIR / "train.en").is_file():
    raise RuntimeError(f"KERAS_ATTENTION_MULTI30K={_FOLDER} holds no Multi30k train.en")

needs_multi30k = pytest.mark.skipif(
    MULTI30K_DIR is None, reason="set KERAS_ATTENTION_MULTI30K to the Multi30k folder"
)
