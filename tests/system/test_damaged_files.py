"""Damaged files of a run folder and of its export: every reader names the file in one line.

One tiny run (lowercased, so with a recaser) is killed at the end of its last epoch, before
that epoch's backup; a copy of it resumed (and exported) is the finished run. Each case
copies the finished run, damages one of its files in one way (cut to half, emptied,
overwritten with other bytes, not JSON, a field of another type, a field missing or unknown)
and runs a tool that reads that file, in this process: it must exit with status 2 and
exactly one line on stderr, `error: ...`, naming the damaged file (no traceback, nothing
translated or trained). Library readers (`Translator.from_preset`, `export_metadata`) must
raise a `ValueError` naming it.

Copies of the killed run whose backup or checkpoints are damaged are started again (the
finished run is one, its latest backup and a checkpoint cut to half): the damage is found
before any epoch trains, and the run recovers (from the other backup copy, or writing a
checkpoint again from the backup that holds its weights) or is refused in one line, as
`keras_attention.training.resume_check` documents.
"""

import json
import os
import random
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from keras_attention.core.atomic_files import FAULT_VARIABLE
from keras_attention.core.file_checks import CorruptFileError
from keras_attention.data.generated_corpus import generate_pairs
from keras_attention.data.tokenizer import SubwordTokenizer
from keras_attention.runs.files import build_run_model, load_run_model
from keras_attention.runs.run_lock import LOCK_FILE
from keras_attention.serving.export import export_metadata
from keras_attention.serving.translator import Translator
from keras_attention.training.resume_check import check_resume_files
from tests.run_helpers import main_error
from tests.tools.test_train import train_command

# The run: lowercased (a recaser file), one beam, a few validation sentences.
OPTIONS = ("--lowercase", "--validation-bleu-sentences", "20", "--beam-size", "1")
EPOCHS = 3
Damage = Callable[[Path], None]


# Damages.


def cut_to_half(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def empty(path: Path) -> None:
    path.write_bytes(b"")


def garbage(path: Path) -> None:
    """Other bytes, as many (at least 64)."""
    path.write_bytes(random.Random(0).randbytes(max(path.stat().st_size, 64)))


def not_json(path: Path) -> None:
    path.write_text('{"model": ', encoding="utf-8")


def cut_at_a_line_end(path: Path) -> None:
    """The first half of the lines, each whole: what no text format can tell from a file."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[: len(lines) // 2]), encoding="utf-8")


def json_change(**changes) -> Damage:
    """A damage that sets the JSON object's fields to `changes` (`None`: removes it)."""

    def change(path: Path) -> None:
        values = json.loads(path.read_text(encoding="utf-8"))
        for name, value in changes.items():
            if value is None:
                values.pop(name, None)
            else:
                values[name] = value
        path.write_text(json.dumps(values), encoding="utf-8")

    return change


BYTES = {"half": cut_to_half, "empty": empty, "garbage": garbage}
JSON = {**BYTES, "not JSON": not_json}


def other_tokenizer(vocabulary_size: int) -> Damage:
    """A damage that replaces the run's tokenizer with one learned from other sentences."""

    def replace(path: Path) -> None:
        texts = [text for pair in generate_pairs(200, seed=1) for text in pair]
        SubwordTokenizer.train(texts, vocabulary_size, recase_texts=texts).save(path)

    return replace


def older_run_with(damage: Damage) -> Damage:
    """`damage`, in a run whose `tokenizer.json` predates the digests of its files."""

    def apply(path: Path) -> None:
        damage(path)
        json_change(files=None)(path.parent / "tokenizer.json")

    return apply


# The cases: (file, damage, tool, arguments). "{run}" is the damaged copy, "{out}" a folder
# for outputs; "train" starts the run again with its own command.

RUN_TOOLS = {
    "translate": ["--run-dir", "{run}"],
    "evaluate": ["--run-dir", "{run}", "--limit", "2"],
    "export": ["--run-dir", "{run}", "--output", "{out}/export"],
    "average_checkpoints": ["--run-dir", "{run}", "--last", "2", "--output", "{out}/average.keras"],
    "convert_ctranslate2": ["--run-dir", "{run}", "--output", "{out}/ctranslate2"],
    "train": ["{train}"],
}
CONFIG_DAMAGES = {
    **JSON,
    "seed a string": json_change(seed="0"),
    "vocabulary_size a boolean": json_change(vocabulary_size=True),
    "train files not strings": json_change(train=[["a.en", 1]]),
    "preset missing": json_change(preset=None),
    "seed missing": json_change(seed=None),
    "an unknown field": json_change(shuffle_buffer=1000),
}
TOKENIZER_DAMAGES = {
    **BYTES,
    "another run's": other_tokenizer(120),
    "another vocabulary, older run": older_run_with(other_tokenizer(100)),
}
RECASER_DAMAGES = {**BYTES, "cut at a line end": cut_at_a_line_end}
TOKENIZER_RECORD_DAMAGES = {
    **JSON,
    "files a string": json_change(files="tokenizer.model"),
    "lowercase a string": json_change(lowercase="yes"),
}
SELECTION_DAMAGES = {
    **JSON,
    "model a number": json_change(model=1),
    "validation a list": json_change(validation=[]),
    "model missing": json_change(model=None),
}
TEST_METRICS_DAMAGES = {
    **JSON,
    "loss a string": json_change(loss="low"),
    "loss missing": json_change(loss=None),
}


def cases(file: str, damages: dict[str, Damage], tools: dict[str, list[str]]) -> list:
    return [
        pytest.param(file, damage, tool, arguments, id=f"{file}-{name}-{tool}")
        for name, damage in damages.items()
        for tool, arguments in tools.items()
    ]


def tools(*names: str) -> dict[str, list[str]]:
    return {name: RUN_TOOLS[name] for name in names}


LAST = ["--run-dir", "{run}", "--checkpoint", "last", "--limit", "2"]
BEST = ["--run-dir", "{run}", "--checkpoint", "best", "--limit", "2"]
SAVED_MODEL = {
    "translate": ["--model", "{run}/export/1"],
    "evaluate": ["--model", "{run}/export/1", "--limit", "2"],
}
TOOL_CASES = [
    *cases("config.json", CONFIG_DAMAGES, RUN_TOOLS),
    *cases("tokenizer.model", TOKENIZER_DAMAGES, tools("translate", "export", "train")),
    *cases("tokenizer.recaser.tsv", RECASER_DAMAGES, tools("translate", "evaluate", "train")),
    *cases("tokenizer.json", TOKENIZER_RECORD_DAMAGES, tools("translate", "train")),
    *cases("model.keras", BYTES, tools("translate", "export", "convert_ctranslate2", "train")),
    *cases("checkpoints/epoch_002.weights.h5", BYTES, tools("average_checkpoints")),
    *cases("checkpoints/epoch_003.weights.h5", BYTES, {"evaluate": LAST}),
    *cases("checkpoints/best.weights.h5", BYTES, {"evaluate": BEST}),
    *cases("bleu.json", SELECTION_DAMAGES, tools("train")),
    *cases("test_metrics.json", TEST_METRICS_DAMAGES, tools("train")),
    *cases("export/1/saved_model.pb", BYTES, SAVED_MODEL),
    *cases("export/1/variables/variables.index", BYTES, SAVED_MODEL),
    *cases("export/1/variables/variables.data-00000-of-00001", BYTES, SAVED_MODEL),
]


# Damaged files a resumed run recovers: the latest backup (it resumes from the previous copy,
# of epoch 1's end) and epoch 1's checkpoint (written again from that copy, which holds it).
RECOVERED = ("backup/latest.weights.h5", "checkpoints/epoch_001.weights.h5")


@pytest.fixture(scope="module")
def recovered_run(
    killed_run: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, subprocess.CompletedProcess]:
    """A copy of the killed run with `RECOVERED` cut to half, resumed and exported; its folder
    and the resumed start."""
    path = Path(shutil.copytree(killed_run, tmp_path_factory.mktemp("recovered") / "run"))
    for name in RECOVERED:
        cut_to_half(path / name)
    return path, resume(path, export=True)


@pytest.fixture(scope="module")
def finished_run(recovered_run: tuple[Path, subprocess.CompletedProcess]) -> Path:
    """A tiny finished run: every file of a run folder, and its export."""
    path, done = recovered_run
    assert done.returncode == 0, done.stderr[-3000:]
    for name in ("tokenizer.recaser.tsv", "model.keras", "bleu.json", "export/1/saved_model.pb"):
        assert (path / name).is_file(), name
    return path


def run_copy(run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(run, tmp_path / "run"))


def train_arguments(run: Path, epochs: int, *extra: str) -> list[str]:
    """`tools/train.py`'s arguments that start the run in `run` again."""
    return train_command(run, epochs, *OPTIONS, *extra)[2:]


def tool_arguments(arguments: list[str], run: Path, out: Path) -> list[str]:
    if arguments == ["{train}"]:
        return train_arguments(run, EPOCHS)
    return [argument.format(run=run, out=out) for argument in arguments]


@pytest.mark.parametrize(("file", "damage", "tool", "arguments"), TOOL_CASES)
def test_a_tool_names_the_damaged_file(
    finished_run: Path, tmp_path: Path, file: str, damage: Damage, tool: str, arguments: list
):
    run = run_copy(finished_run, tmp_path)
    damage(run / file)
    (tmp_path / "out").mkdir()
    error = main_error(tool, *tool_arguments(arguments, run, tmp_path / "out"))
    assert str(run / file) in error
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_missing_variables_folder_is_named(finished_run: Path, tmp_path: Path):
    run = run_copy(finished_run, tmp_path)
    shutil.rmtree(run / "export" / "1" / "variables")
    error = main_error("translate", "--model", run / "export" / "1")
    assert f"{run / 'export' / '1' / 'variables' / 'variables.index'} is missing" in error


@pytest.mark.parametrize(
    ("file", "damage"),
    [
        pytest.param(file, damage, id=f"{file}-{name}")
        for file, damages in (
            ("config.json", {**JSON, "beam_size a string": json_change(beam_size="4")}),
            ("tokenizer.model", TOKENIZER_DAMAGES),
            ("tokenizer.recaser.tsv", RECASER_DAMAGES),
            ("model.keras", BYTES),
        )
        for name, damage in damages.items()
    ],
)
def test_translator_from_preset_names_the_damaged_file(
    finished_run: Path, tmp_path: Path, file: str, damage: Damage
):
    run = run_copy(finished_run, tmp_path)
    damage(run / file)
    with pytest.raises(ValueError) as error:
        Translator.from_preset(run)
    assert str(run / file) in str(error.value)


@pytest.mark.parametrize(
    "damage",
    [*JSON.values(), json_change(beam_size="4"), json_change(source_language=["en"])],
    ids=[*JSON, "beam_size a string", "source_language a list"],
)
def test_export_metadata_names_the_damaged_file(finished_run: Path, tmp_path: Path, damage):
    run = run_copy(finished_run, tmp_path)
    path = run / "export" / "1" / "assets.extra" / "keras_attention.json"
    damage(path)
    with pytest.raises(CorruptFileError, match=str(path)):
        export_metadata(run / "export" / "1")


def test_the_undamaged_run_loads(finished_run: Path):
    """The cases above fail for their damage: without it, every reader succeeds."""
    model, tokenizer = load_run_model(finished_run)
    assert model.vocabulary_size == tokenizer.vocabulary_size
    assert Translator.from_preset(finished_run).translate_texts(["A man."])
    assert export_metadata(finished_run / "export" / "1")["beam_size"] == 1


# A killed run whose files are then damaged.


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of 3 epochs killed at the end of its third, before that epoch's backup: the
    backup stands at the end of epoch 2, its previous copy at the end of epoch 1, and the
    checkpoints of epochs 1 to 3 are written (the third is dropped when the run resumes)."""
    path = tmp_path_factory.mktemp("killed") / "run"
    command = train_command(path, EPOCHS, *OPTIONS, "--no-export")
    environment = {**os.environ, FAULT_VARIABLE: f"epoch_end:{EPOCHS}"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=environment)
    assert done.returncode == -9, done.stderr[-3000:]  # SIGKILL
    backup = path / "backup"
    assert json.loads((backup / "training_metadata.json").read_text())["epoch"] == 2
    assert json.loads((backup / "training_metadata.json.bkp").read_text())["epoch"] == 1
    return path


def resume(run: Path, export: bool = False) -> subprocess.CompletedProcess:
    """Starts the killed run again, as a program (its whole log is looked at)."""
    command = train_command(run, EPOCHS, *OPTIONS, "--export" if export else "--no-export")
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done


def run_files(run: Path) -> dict[Path, bytes]:
    """The files of a run folder and their content, less the lock of the run using it."""
    return {
        path: path.read_bytes()
        for path in sorted(run.rglob("*"))
        if path.is_file() and path.name != LOCK_FILE
    }


def trained_epochs(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.startswith("Epoch ")]


def test_a_resumed_run_recovers_before_it_trains(
    recovered_run: tuple[Path, subprocess.CompletedProcess],
):
    run, done = recovered_run
    assert done.returncode == 0, done.stderr[-3000:]
    # Each recovery is logged before training starts again.
    log = done.stderr.splitlines()
    start = next(i for i, line in enumerate(log) if "training starts at epoch" in line)
    for name in RECOVERED:
        warning = next(i for i, line in enumerate(log) if str(run / name) in line)
        assert log[warning].startswith("WARNING") and warning < start, done.stderr[-3000:]
    assert log[start].endswith("training starts at epoch 2, batch 0")
    assert trained_epochs(done)[0] == f"Epoch 2/{EPOCHS}"
    assert (run / "model.keras").is_file()
    model = build_run_model(run)
    for epoch in range(1, EPOCHS + 1):  # every checkpoint reads back whole
        model.load_weights(run / "checkpoints" / f"epoch_{epoch:03d}.weights.h5")


@pytest.mark.parametrize(
    ("damage", "named", "message"),
    [
        pytest.param(
            {"backup/latest.weights.h5": cut_to_half, "backup/latest.weights.h5.bkp": garbage},
            "backup/latest.weights.h5.bkp",
            "the run cannot resume",
            id="both backup copies",
        ),
        pytest.param(
            {
                "checkpoints/epoch_001.weights.h5": cut_to_half,
                "backup/latest.weights.h5.bkp": lambda path: path.unlink(),
            },
            "checkpoints/epoch_001.weights.h5",
            "remove it to resume without it",
            id="a checkpoint no backup holds",
        ),
        pytest.param(
            {"validation_bleu.json": json_change(scores=[])},
            "validation_bleu.json",
            "must be an object",
            id="validation scores",
        ),
        pytest.param(
            {"backup/training_metadata.json": not_json, "backup/latest.weights.h5.bkp": empty},
            "backup/training_metadata.json",
            "not valid JSON",
            id="metadata and previous copy",
        ),
    ],
)
def test_a_resumed_run_refuses_what_it_cannot_recover(
    killed_run: Path, tmp_path: Path, damage: dict, named: str, message: str
):
    run = run_copy(killed_run, tmp_path)
    for name, change in damage.items():
        change(run / name)
    files = run_files(run)
    error = main_error("train", *train_arguments(run, EPOCHS, "--no-export"))
    assert str(run / named) in error and message in error
    assert run_files(run) == files  # nothing trained, written or removed


@pytest.mark.parametrize(
    ("file", "damage"),
    [
        pytest.param(file, damage, id=f"{file}-{name}")
        for file in ("latest.weights.h5", "training_metadata.json")
        for name, damage in {
            **(JSON if file.endswith(".json") else BYTES),
            "missing": lambda path: path.unlink(),
            **({"epoch missing": json_change(epoch=None)} if file.endswith(".json") else {}),
            **({"epoch a string": json_change(epoch="2")} if file.endswith(".json") else {}),
        }.items()
    ],
)
def test_a_damaged_latest_backup_falls_back_to_its_previous_copy(
    killed_run: Path, tmp_path: Path, file: str, damage: Damage
):
    run = run_copy(killed_run, tmp_path)
    damage(run / "backup" / file)
    notes = check_resume_files(build_run_model(run), run)
    assert len(notes) == 1 and str(run / "backup" / file) in notes[0]
    backup = run / "backup"
    for name in ("latest.weights.h5", "training_metadata.json"):
        assert (backup / name).read_bytes() == (backup / f"{name}.bkp").read_bytes()
    assert check_resume_files(build_run_model(run), run) == []  # whole again
