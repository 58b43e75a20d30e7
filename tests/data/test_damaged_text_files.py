"""Odd and damaged text files (issue 53, points 2, 7 and 8): every reader of text files reads
a UTF-8 byte-order mark on a file's first line as nothing, and names a damaged gzip file
(truncated, or corrupt) or a streamed pair of files of different lengths in one error, which
the tools print as one `error:` line before any work."""

import contextlib
import gzip
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from keras_attention.core.file_checks import CorruptFileError
from keras_attention.data.corpus_files import ParallelFiles, iterate_pairs
from keras_attention.data.generated_corpus import generated_splits
from keras_attention.data.multi30k import load_multi30k
from keras_attention.data.streaming import parallel_text, read_parallel
from keras_attention.data.text_files import check_gzip, decode_lines, read_lines
from keras_attention.runs.config import TrainConfig
from keras_attention.runs.corpus import load_run_corpus
from keras_attention_cli.commands.evaluate import main as evaluate_main
from keras_attention_cli.files import read_input_lines
from keras_attention_cli.line_batches import line_batches
from tests.data.test_multi30k import write_fake_origin
from tests.run_helpers import main_error
from tests.runs.test_own_data import TINY

BOM = "\ufeff"
PAIRS = generated_splits(num_train=200, num_val=0, num_test=0, seed=5)["train"]
SOURCES = [source for source, _ in PAIRS]
TARGETS = [target for _, target in PAIRS]


def write_lines(path: Path, lines: list[str], bom: bool = False) -> Path:
    """`lines` as a UTF-8 file (gzip if `path` ends in `.gz`), a BOM first if `bom`."""
    data = ((BOM if bom else "") + "".join(line + "\n" for line in lines)).encode("utf-8")
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)
    return path


def stream_pairs(source: Path, target: Path) -> list[tuple[str, str]]:
    return [
        (s.decode("utf-8"), t.decode("utf-8"))
        for s, t in parallel_text([source], [target]).as_numpy_iterator()
    ]


# Point 2: a byte-order mark on the first line is no part of the sentence.


def test_decode_lines_drops_a_byte_order_mark_of_the_first_line_only():
    raw = [f"{BOM}one\n".encode(), f"{BOM}two\r\n".encode()]
    assert list(decode_lines(raw, "x")) == ["one", f"{BOM}two"]  # later, it is text


def test_every_reader_reads_a_file_with_a_bom_as_the_file_without(tmp_path: Path):
    """Plain and gzip files, each starting with a BOM: the stream (two shards, each with its
    own first line), in memory, Python's pass and the tools' readers of plain text."""
    plain = (write_lines(tmp_path / "a.en", SOURCES[:5], bom=True),
             write_lines(tmp_path / "a.de", TARGETS[:5], bom=True))  # fmt: skip
    packed = (write_lines(tmp_path / "b.en.gz", SOURCES[5:9], bom=True),
              write_lines(tmp_path / "b.de.gz", TARGETS[5:9], bom=True))  # fmt: skip
    streamed = parallel_text([plain[0], packed[0]], [plain[1], packed[1]]).as_numpy_iterator()
    assert sorted((s.decode(), t.decode()) for s, t in streamed) == sorted(PAIRS[:9])
    assert read_parallel(*packed) == (SOURCES[5:9], TARGETS[5:9])
    for files, expected in ((plain, PAIRS[:5]), (packed, PAIRS[5:9])):
        assert list(iterate_pairs(ParallelFiles((str(files[0]),), (str(files[1]),)))) == expected
    assert read_lines(packed[0]) == SOURCES[5:9]
    assert read_input_lines([str(plain[0])]) == SOURCES[:5]
    batches = line_batches([str(plain[0])], 2)
    assert [line for batch in batches for line in batch] == SOURCES[:5]


def test_a_line_that_is_only_a_bom_is_blank(tmp_path: Path):
    source = tmp_path / "s.en"
    source.write_bytes(f"{BOM}\n{SOURCES[1]}\n".encode())
    target = write_lines(tmp_path / "t.de", TARGETS[:2])
    expected = [(SOURCES[1], TARGETS[1])]
    assert list(zip(*read_parallel(source, target), strict=True)) == expected
    assert list(iterate_pairs(ParallelFiles((str(source),), (str(target),)))) == expected


@pytest.mark.parametrize("stream", [False, True])
def test_a_validation_sentence_with_a_bom_is_removed_from_training(tmp_path: Path, stream: bool):
    """The fault probe's case: 60 validation pairs, all in the training files, the first with
    a BOM (and the training files' first line too, a validation sentence without one)."""
    train = (write_lines(tmp_path / "train.en", SOURCES, bom=True),
             write_lines(tmp_path / "train.de", TARGETS, bom=True))  # fmt: skip
    valid = (write_lines(tmp_path / "valid.en", SOURCES[:60], bom=True),
             write_lines(tmp_path / "valid.de", TARGETS[:60], bom=True))  # fmt: skip
    test = (write_lines(tmp_path / "test.en", SOURCES[-10:]),
            write_lines(tmp_path / "test.de", TARGETS[-10:]))  # fmt: skip
    config = TrainConfig(
        output_dir=str(tmp_path / "run"),
        train=[[str(path) for path in train]],
        valid=[str(path) for path in valid],
        test=[str(path) for path in test],
        stream=stream,
        train_steps=4 if stream else None,
    )
    run_corpus = load_run_corpus(config)
    assert run_corpus.corpus["val"] == (SOURCES[:60], TARGETS[:60])
    excluded = set(run_corpus.excluded_sources)
    if stream:
        # The stream leaves out the pairs whose source is excluded: every first line is one.
        trained = stream_pairs(*train)
        assert trained[0] == PAIRS[0]
        assert sum(source in excluded for source, _ in trained) == 70
    else:
        assert run_corpus.removed == 70
        assert run_corpus.corpus["train"] == (SOURCES[60:-10], TARGETS[60:-10])


# Point 7: a damaged gzip file is named, and called damaged.


def cut_to_half(path: Path) -> str:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return "truncated gzip"


def bad_data(path: Path) -> str:
    """Other bytes in place of the compressed data (zlib: "invalid block type")."""
    data = path.read_bytes()
    path.write_bytes(data[:10] + b"\xff" * 20 + data[30:])
    return "corrupt gzip"


def bad_checksum(path: Path) -> str:
    data = path.read_bytes()
    path.write_bytes(data[:-8] + bytes(4) + data[-4:])
    return "corrupt gzip"


def not_gzip(path: Path) -> str:
    path.write_bytes(gzip.decompress(path.read_bytes()))
    return "not a gzip file"


DAMAGES = [cut_to_half, bad_data, bad_checksum, not_gzip]


def damaged_pair(folder: Path, damage: Callable[[Path], str], side: int = 0) -> tuple:
    """A pair of gzip files, one side damaged: `(source, target, damaged path, words)`."""
    paths = (write_lines(folder / "c.en.gz", SOURCES), write_lines(folder / "c.de.gz", TARGETS))
    words = damage(paths[side])
    return *paths, paths[side], words


def check_damage_error(error: BaseException, path: Path, words: str) -> None:
    message = str(error)
    assert isinstance(error, CorruptFileError), repr(error)
    assert message.startswith(f"{path} is damaged: ") and words in message, message


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("side", [0, 1])
def test_a_damaged_gzip_file_read_into_memory_is_named(tmp_path: Path, damage, side: int):
    source, target, path, words = damaged_pair(tmp_path, damage, side)
    with pytest.raises(CorruptFileError) as caught:
        read_parallel(source, target)
    check_damage_error(caught.value, path, words)
    with pytest.raises(CorruptFileError) as caught:
        check_gzip(path)
    check_damage_error(caught.value, path, words)


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_gzip_file_read_in_python_is_named(tmp_path: Path, damage):
    """The one pass in Python over a streamed corpus (its size, the held-out sample)."""
    source, target, path, words = damaged_pair(tmp_path, damage, side=1)
    with pytest.raises(CorruptFileError) as caught:
        list(iterate_pairs(ParallelFiles((str(source),), (str(target),))))
    check_damage_error(caught.value, path, words)


def test_a_sound_gzip_file_passes_the_check(tmp_path: Path):
    check_gzip(write_lines(tmp_path / "ok.en.gz", SOURCES))


def test_a_damaged_multi30k_download_is_named(tmp_path: Path):
    origin = tmp_path / "origin"
    write_fake_origin(origin)
    words = cut_to_half(origin / "val.de.gz")
    with pytest.raises(CorruptFileError) as caught:
        load_multi30k(origin="file://" + str(origin), cache_dir=str(tmp_path / "cache"))
    check_damage_error(caught.value, tmp_path / "cache" / "multi30k" / "multi30k_val.de.gz", words)


# Point 8: a streamed pair whose files differ in length is named in Python's pass.


@pytest.mark.parametrize("longer", ["source", "target"])
def test_iterate_pairs_names_files_of_different_lengths(tmp_path: Path, longer: str):
    source = write_lines(tmp_path / "d.en.gz", SOURCES if longer == "source" else SOURCES[:-1])
    target = write_lines(tmp_path / "d.de", TARGETS if longer == "target" else TARGETS[:-1])
    short, long = (target, source) if longer == "source" else (source, target)
    with pytest.raises(ValueError) as caught:
        list(iterate_pairs(ParallelFiles((str(source),), (str(target),))))
    expected = f"parallel files differ in length: {short} ends after line 199, {long} goes on"
    assert str(caught.value).startswith(expected)
    # The stream's own check says the same.
    with pytest.raises(ValueError) as from_stream:
        read_parallel(source, target)
    assert str(from_stream.value) == str(caught.value)


def test_iterate_pairs_names_a_line_that_is_not_utf8(tmp_path: Path):
    source = write_lines(tmp_path / "e.en", SOURCES[:3])
    source.write_bytes(source.read_bytes() + b"caf\xe9\n")
    target = write_lines(tmp_path / "e.de", TARGETS[:4])
    with pytest.raises(ValueError, match=rf"^{source}:4: not valid UTF-8"):
        list(iterate_pairs(ParallelFiles((str(source),), (str(target),))))


# The tools: one line, naming the file.


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("damage", [cut_to_half, bad_data])
def test_train_names_a_damaged_gzip_file(tmp_path: Path, damage, stream: bool):
    source, target, path, words = damaged_pair(tmp_path, damage, side=1)
    streaming = ["--stream", "--train-steps", "4"] if stream else ["--epochs", "1"]
    run = tmp_path / "run"
    line = main_error("train", "--train", source, target, *streaming, "--run-dir", run, *TINY)
    assert line.startswith(f"error: {path} is damaged: ") and words in line, line
    assert not run.exists()


def test_train_names_streamed_files_of_different_lengths(tmp_path: Path):
    source = write_lines(tmp_path / "f.en", SOURCES)
    target = write_lines(tmp_path / "f.de", TARGETS[:-1])
    run = tmp_path / "run"
    line = main_error("train", "--train", source, target, "--stream", "--train-steps", "4",
                      "--run-dir", run, *TINY)  # fmt: skip
    assert line.startswith(
        f"error: parallel files differ in length: {target} ends after line 199, {source} goes on"
    ), line
    assert not run.exists()


def test_evaluate_names_a_damaged_gzip_file_of_the_run(finished_tiny_run: Path, tmp_path: Path):
    """A run trained on files whose validation file was damaged since."""
    run = Path(shutil.copytree(finished_tiny_run, tmp_path / "run"))
    valid = [write_lines(tmp_path / "v.en.gz", SOURCES[:20]),
             write_lines(tmp_path / "v.de.gz", TARGETS[:20])]  # fmt: skip
    test = [write_lines(tmp_path / "t.en", SOURCES[20:40]),
            write_lines(tmp_path / "t.de", TARGETS[20:40])]  # fmt: skip
    config = json.loads((run / "config.json").read_text())
    config.update(train=[[str(test[0]), str(test[1])]], dataset=None,
                  valid=[str(p) for p in valid], test=[str(p) for p in test])  # fmt: skip
    (run / "config.json").write_text(json.dumps(config))
    words = cut_to_half(valid[1])
    stderr = io.StringIO()
    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(stderr),
        pytest.raises(SystemExit) as exit_info,
    ):
        evaluate_main(["--run-dir", str(run), "--split", "val"])
    assert exit_info.value.code == 2, stderr.getvalue()[-3000:]
    lines = stderr.getvalue().splitlines()  # the model's path comes first, on stdout
    assert len(lines) == 1, stderr.getvalue()[-3000:]
    assert lines[0].startswith(f"error: {valid[1]} is damaged: ") and words in lines[0], lines
