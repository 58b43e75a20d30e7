"""Writes a result's files: texts and a figure, each written whole and then moved into place
(the project's `atomic_files`), so that a killed command leaves the old files or the new."""

import os
from collections.abc import Callable
from pathlib import Path

from keras_attention.core.atomic_files import atomic_path, write_text_atomically


def write_outputs(
    output_dir: str | os.PathLike, texts: dict[str, str], figure: tuple[str, Callable] | None
) -> None:
    """Writes each `{name: text}` into `output_dir`, and `figure` (`(name, plot)`, `plot`
    called with the path to write) beside them."""
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        write_text_atomically(output / name, text)
    if figure is not None:
        name, plot = figure
        with atomic_path(output / name, suffix=".png") as temporary:
            plot(temporary)
