"""A streamed corpus across two local workers: with as many shards as workers, each worker
reads only its own shards (`AutoShardPolicy.FILE`), and a `tools/train.py` run trains the
steps it was asked for."""

import json
import sys
from pathlib import Path

from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.distribute.local_cluster import run_local_cluster
from tests.distribute.test_multi_worker import TIMEOUT, assert_succeeded, no_worker_left_behind  # noqa: F401

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


def test_train_tool_trains_two_workers_on_their_own_shards_by_steps(tmp_path: Path):
    from keras_attention.data.corpus_shards import write_held_out, write_sharded_corpus
    from tests.tools.test_train import logged_epochs, train_command

    data, output = tmp_path / "data", tmp_path / "run"
    write_sharded_corpus(data, 1000, 2)
    write_held_out(data, 30)
    command = train_command(output, 1, "--dataset", "shards", "--data-dir", str(data))
    command[command.index("--epochs") : command.index("--epochs") + 2] = []
    command[command.index("--train-pairs") : command.index("--train-pairs") + 2] = []
    command += ["--train-steps", "8", "--save-every-steps", "4", "--no-export"]
    results = run_local_cluster(command, num_workers=2, timeout=TIMEOUT)
    assert_succeeded(results)
    assert logged_epochs(output) == [0, 1]  # two rounds
    # Each worker's 2 batches of a round made 4 steps, the same ones on both workers.
    rounds = [[round_line(line) for line in result.output.splitlines() if "/step - " in line]
              for result in results]  # fmt: skip
    assert [steps for steps, _ in rounds[0]] == ["4/4", "4/4"]
    assert rounds[0] == rounds[1]


def round_line(line: str) -> tuple[str, list[str]]:
    """Keras's line for an epoch -> its steps and metrics (`4/4 - 12s - 3s/step - loss: ..`)."""
    steps, _, _, *metrics = line.split(" - ")
    return steps, [metric for metric in metrics if not metric.startswith("elapsed_s")]
