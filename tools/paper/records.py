"""The sweep's records: each finished row's scores and settings without its weights, kept
where a checkout keeps them (`docs/paper/sweep/`), so that a sweep spread over several
sessions or machines goes on where it stopped.

A records folder is itself a sweep folder: its `sweep.json` and, per finished row,
`<row>/seed<N>/` with the files that mark a row finished and score it (`bleu.json`,
`training_log.csv`, the run's `config.json`, and the sweep's `row_time.json`), plus the
failures' `logs/*.failed.json`. The corpus folder, in `sweep.json` and in each `config.json`,
is kept as `DATA_DIR`: records carry no path of the machine that trained them.
So `tools/ablate.py table --work-dir docs/paper/sweep` writes the table from it, and a sweep
started in a copy of it (`cp -r docs/paper/sweep runs/ablation`) trains only the rows it
lacks.

Example:

>>> from tools.paper.sweep import SweepConfig, collect_results, run_sweep
>>> from tools.paper.sweep import TINY_TRAIN_ARGS
>>> from tools.paper.variations import select
>>> config = SweepConfig("kept", select(["D smoothing=0"]), train_steps=4,
...     train_args=TINY_TRAIN_ARGS, base_seeds=(1,))
>>> saved = save_records(run_sweep(config), "kept", "records")
>>> sorted(path.name for path in Path("records", "base", "seed1").iterdir())
['bleu.json', 'config.json', 'row_time.json', 'training_log.csv']
>>> [result.status for result in collect_results(dataclasses.replace(config, work_dir="records"))]
['done', 'done']
"""

import dataclasses  # noqa: F401 (the example's)
import json
import os
from collections.abc import Sequence
from pathlib import Path

from keras_attention.core.atomic_files import write_bytes_atomically
from tools.paper.sweep import SETTINGS_FILE, TIME_FILE, RowResult, failure_file

RECORD_FILES = ("bleu.json", "training_log.csv", "config.json", TIME_FILE)


def _without_data_dir(config: bytes) -> bytes:
    """A run's `config.json` with its corpus folder as `DATA_DIR` (this machine's path is
    not the record's: `SweepConfig.settings`)."""
    settings = json.loads(config)
    if settings.get("data_dir") is not None:
        settings["data_dir"] = "DATA_DIR"
    return (json.dumps(settings, indent=2) + "\n").encode()


def save_records(
    results: Sequence[RowResult], work_dir: str | os.PathLike, records_dir: str | os.PathLike
) -> int:
    """Copies the sweep's settings and each finished row's `RECORD_FILES` (and each failed
    row's failure record) from `work_dir` into `records_dir`, every file written whole;
    returns the number of rows copied. A row not yet finished is left out (so a records
    folder never holds a half-trained row), and rows already there are kept.

    Raises:
        ValueError: if `records_dir` is `work_dir` (there is nothing to copy).
    """
    source, target = Path(work_dir).resolve(), Path(records_dir).resolve()
    if source == target:
        raise ValueError(f"the records folder {records_dir} is the sweep folder itself")
    write_bytes_atomically(target / SETTINGS_FILE, (source / SETTINGS_FILE).read_bytes())
    copied = 0
    for result in results:
        if result.status == "done":
            row = result.run_dir.resolve().relative_to(source)
            for name in RECORD_FILES:
                if (result.run_dir / name).exists():  # a row without its time: no time
                    data = (result.run_dir / name).read_bytes()
                    if name == "config.json":
                        data = _without_data_dir(data)
                    write_bytes_atomically(target / row / name, data)
            copied += 1
        elif result.status == "failed":
            failure = failure_file(source, result.variation, result.seed)
            kept = failure_file(target, result.variation, result.seed)
            write_bytes_atomically(kept, failure.read_bytes())
            copied += 1
    return copied
