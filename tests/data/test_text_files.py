"""Reading parallel text files: errors that name the file and line, blank pairs, line endings."""

import io
import re
from pathlib import Path

import pytest

from keras_attention.data.streaming import read_parallel
from keras_attention.data.text_files import decode_lines, read_lines
from tests.data.test_multi30k import MULTI30K_DIR, needs_multi30k

# Multi30k train.de line 7366 (1-based) holds a literal TAB, upstream; it must be kept as is.
QUIRK_LINE = 7366


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def utf8_lines(lines: list[str], ending: str = "\n") -> bytes:
    return "".join(line + ending for line in lines).encode("utf-8")


@pytest.fixture
def pair_files(tmp_path: Path):
    """Writes a source and a target file from lists of lines; returns their paths."""

    def make(sources: list[str], targets: list[str]) -> tuple[Path, Path]:
        return (
            write(tmp_path / "corpus.en", utf8_lines(sources)),
            write(tmp_path / "corpus.de", utf8_lines(targets)),
        )

    return make


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_read_lines_strips_line_endings_only(tmp_path, ending):
    lines = ["  A man runs. ", "Ein Mädchen läuft über die Straße.", "x\ty"]
    path = write(tmp_path / "a.txt", utf8_lines(lines, ending))
    assert read_lines(path) == lines


def test_read_lines_last_line_without_newline(tmp_path):
    path = write(tmp_path / "a.txt", b"eins\nzwei\r\ndrei")
    assert read_lines(path) == ["eins", "zwei", "drei"]


def test_read_lines_missing_file_names_the_path(tmp_path):
    path = tmp_path / "missing.en"
    with pytest.raises(FileNotFoundError, match=re.escape(str(path))):
        read_lines(path)


def test_read_lines_empty_file_names_the_path(tmp_path):
    path = write(tmp_path / "empty.en", b"")
    with pytest.raises(ValueError, match=re.escape(str(path))):
        read_lines(path)


def test_read_lines_invalid_utf8_names_file_and_line(tmp_path):
    path = write(tmp_path / "bad.de", b"gut\nauch gut\nschlecht \xff\xfe hier\nwieder gut\n")
    with pytest.raises(ValueError, match=re.escape(f"{path}:3")):
        read_lines(path)


def test_decode_lines_reads_lazily_and_names_the_source_and_line():
    lines = decode_lines(io.BytesIO(b"eins\r\nzwei\n\xc3\x28 drei\n"), "<stdin>")
    assert [next(lines), next(lines)] == ["eins", "zwei"]  # read before the bad line
    with pytest.raises(ValueError, match=re.escape("<stdin>:3: not valid UTF-8")):
        next(lines)


def test_read_parallel_keeps_aligned_pairs(pair_files):
    sources = ["A dog runs.", "Two men talk.", "A girl smiles."]
    targets = ["Ein Hund rennt.", "Zwei Männer reden.", "Ein Mädchen lächelt."]
    assert read_parallel(*pair_files(sources, targets)) == (sources, targets)


def test_read_parallel_drops_pairs_with_a_blank_side(pair_files):
    # Blank as `str.strip` sees it, Unicode spaces included.
    sources = ["one", "", "three", "four", " \t", "six", "seven"]
    targets = ["eins", "zwei", "  ", "vier", "fünf", "sechs", "\u3000\xa0\x85"]
    assert read_parallel(*pair_files(sources, targets)) == (
        ["one", "four", "six"],
        ["eins", "vier", "sechs"],
    )


def test_read_parallel_with_no_pair_left_raises(pair_files):
    with pytest.raises(ValueError, match="no non-blank"):
        read_parallel(*pair_files(["", "a"], ["b", " "]))


@pytest.mark.parametrize("side", [0, 1])
def test_read_parallel_missing_file_names_it(pair_files, side):
    paths = list(pair_files(["a"], ["b"]))
    paths[side].unlink()
    with pytest.raises(FileNotFoundError, match=re.escape(str(paths[side]))):
        read_parallel(*paths)


@pytest.mark.parametrize("side", [0, 1])
def test_read_parallel_empty_file_names_it(pair_files, side):
    paths = pair_files(["a", "b"], ["c", "d"])
    paths[side].write_bytes(b"")
    with pytest.raises(ValueError, match=re.escape(str(paths[side]))):
        read_parallel(*paths)


@pytest.mark.parametrize("side", [0, 1])
def test_read_parallel_invalid_utf8_names_file_and_line(pair_files, side):
    paths = pair_files(["a", "b", "c", "d"], ["e", "f", "g", "h"])
    paths[side].write_bytes(b"a\nb\n\xc3\x28\nd\n")  # an invalid two-byte sequence on line 3
    with pytest.raises(ValueError, match=re.escape(f"{paths[side]}:3")):
        read_parallel(*paths)


def test_read_parallel_different_line_counts_names_both_files_and_counts(pair_files):
    source_path, target_path = pair_files(["a", "b", "c"], ["d", "e", "f", "g", "h"])
    with pytest.raises(ValueError) as error:
        read_parallel(source_path, target_path)
    message = str(error.value)
    assert f"{source_path} ends after line 3, {target_path} goes on" in message


@needs_multi30k
def test_multi30k_tab_line_is_kept_as_is():
    sources, targets = read_parallel(MULTI30K_DIR / "train.en", MULTI30K_DIR / "train.de")
    raw = (MULTI30K_DIR / "train.de").read_bytes().split(b"\n")[QUIRK_LINE - 1].decode("utf-8")
    assert "\t" in raw
    assert targets[QUIRK_LINE - 1] == raw
    assert sum("\t" in line for line in targets) == 1
    assert len(sources) == len(targets)
