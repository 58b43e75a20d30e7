"""A streamed corpus across two local workers: with as many shards as workers, each worker
reads only its own shards (`AutoShardPolicy.FILE`); and one `tools/train.py` run on two
workers, which trains the steps it was asked for, and of which only the chief keeps files."""

import json
import os
import sys
from pathlib import Path

import pytest

from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.distribute.local_cluster import run_local_cluster
from tests.distribute.test_multi_worker import (  # noqa: F401
    MARK,
    TIMEOUT,
    assert_succeeded,
    no_worker_left_behind,
    running_workers,
)
from tests.run_helpers import logged_epochs

SCRIPT = Path(__file__).parents[1] / "scripts" / "stream_shards_worker.py"
MARKERS = ("apple", "bread", "cheese", "dates")  # the first word of every line of shard i


def write_marked_shards(folder: Path, lines: int = 40) -> None:
    folder.mkdir()
    for index, marker in enumerate(MARKERS):
        text = "".join(f"{marker} number {line} is here\n" for line in range(lines))
        (folder / f"train.{index}.en").write_text(text)
        (folder / f"train.{index}.de").write_text(text.replace("number", "nummer"))


def worker_results(results: list) -> list[dict]:
    assert_succeeded(results)
    found = []
    for result in results:
        lines = [line for line in result.output.splitlines() if line.startswith("RESULT ")]
        assert len(lines) == 1, result.output[-3000:]
        found.append(json.loads(lines[0].removeprefix("RESULT ")))
    return sorted(found, key=lambda each: each["worker"])


def test_two_workers_read_disjoint_shards_and_split_each_batch_over_two_steps(tmp_path: Path):
    data = tmp_path / "data"
    write_marked_shards(data)
    texts = [line for path in sorted(data.iterdir()) for line in path.read_text().splitlines()]
    tokenizer_path = tmp_path / "tokenizer.model"
    SubwordTokenizer.train(texts, 36).save(tokenizer_path)
    command = [sys.executable, str(SCRIPT), str(data), str(tokenizer_path), "3"]
    first, second = worker_results(run_local_cluster(command, num_workers=2, timeout=TIMEOUT))
    # Each worker saw two whole shards, and no shard was read by both.
    assert len(first["first_words"]) == 2 and len(second["first_words"]) == 2
    assert sorted(first["first_words"] + second["first_words"]) == sorted(MARKERS)
    # A round of 3 batches per worker: each batch is split over the two workers' steps.
    assert first["steps"] == second["steps"] == 6


@pytest.fixture(scope="module")
def train_tool_run(tmp_path_factory) -> dict:
    """One `tools/train.py` run on a two-worker cluster, for the tests of what it does: a
    streamed corpus of two shards, trained by steps (2 rounds of 4), exported by the chief,
    each worker with its own temporary folder. Greedy search: not what these tests check."""
    from keras_attention.data.corpus_shards import write_held_out, write_sharded_corpus
    from tests.tools.test_train import train_command

    root = tmp_path_factory.mktemp("train_tool_cluster")
    data, output, temps = root / "data", root / "run", [root / "tmp0", root / "tmp1"]
    for temp in temps:
        temp.mkdir()
    write_sharded_corpus(data, 1000, 2)
    write_held_out(data, 30)
    command = train_command(output, 1, "--dataset", "shards", "--data-dir", str(data))
    command[command.index("--epochs") : command.index("--epochs") + 2] = []
    command[command.index("--train-pairs") : command.index("--train-pairs") + 2] = []
    command += ["--train-steps", "8", "--save-every-steps", "4", "--beam-size", "1"]
    mark = f"{os.getpid()}-train_tool_run"  # the no-worker-left check of this module's run
    results = run_local_cluster(
        command,
        num_workers=2,
        timeout=TIMEOUT,
        env={**os.environ, MARK: mark},
        worker_env=[{"TMPDIR": str(temp)} for temp in temps],
    )
    assert running_workers(mark) == []
    assert_succeeded(results)
    return {"output": output, "temps": temps, "results": results}


def test_train_tool_trains_two_workers_on_their_own_shards_by_steps(train_tool_run: dict):
    assert logged_epochs(train_tool_run["output"]) == [0, 1]  # two rounds
    # Each worker's 2 batches of a round made 4 steps, the same ones on both workers.
    rounds = [[round_line(line) for line in result.output.splitlines() if "/step - " in line]
              for result in train_tool_run["results"]]  # fmt: skip
    assert [steps for steps, _ in rounds[0]] == ["4/4", "4/4"]
    assert rounds[0] == rounds[1]


def test_train_tool_trains_across_two_workers_and_only_the_chief_keeps_files(
    train_tool_run: dict,
):
    output = train_tool_run["output"]
    chief, worker = (result.output for result in train_tool_run["results"])
    chief_files = ["config.json", "tokenizer.model", "model.keras", "test_metrics.json"]
    chief_files += ["bleu.json", "checkpoints/epoch_002.weights.h5", "export/1/saved_model.pb"]
    for name in chief_files:
        assert (output / name).exists(), name
    assert "non-chief worker" in worker and "non-chief worker" not in chief
    # Both workers evaluated the same model on the same test split.
    test_lines = [
        [line for line in text.splitlines() if line.startswith("test:")] for text in (chief, worker)
    ]
    assert len(test_lines[0]) == 1 and test_lines[0] == test_lines[1]
    # The non-chief's temporary folders are gone.
    for temp in train_tool_run["temps"]:
        assert not [path.name for path in temp.iterdir() if path.name.startswith("keras-attention")]


def round_line(line: str) -> tuple[str, list[str]]:
    """Keras's line for an epoch -> its steps and metrics (`4/4 - 12s - 3s/step - loss: ..`)."""
    steps, _, _, *metrics = line.split(" - ")
    return steps, [metric for metric in metrics if not metric.startswith("elapsed_s")]
