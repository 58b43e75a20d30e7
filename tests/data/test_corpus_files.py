"""A user's parallel files: languages from suffixes, globs and several shards per side,
gzip, and the errors that name the argument and file."""

import gzip
from pathlib import Path

import pytest

from keras_attention.data.corpus_files import ParallelFiles, expand, iterate_pairs, language_of
from keras_attention.data.datasets import files_spec, named_spec


@pytest.mark.parametrize(
    "name, code",
    [
        ("my.en", "en"),
        ("train.de.gz", "de"),
        ("a.xx", "xx"),
        ("b.yy", "yy"),
        ("corpus.pt_br", "pt_br"),
        ("corpus.zh-Hans", "zh-Hans"),
        ("notes.txt", None),
        ("train.tok", None),
        ("README", None),
        ("data.english", None),
        (".de", None),
    ],
)
def test_language_of_reads_a_code_suffix_only(name: str, code: str | None):
    assert language_of(Path("some/folder") / name) == code


def write(path: Path, lines: list[str]) -> Path:
    text = "".join(line + "\n" for line in lines).encode()
    path.write_bytes(gzip.compress(text) if path.name.endswith(".gz") else text)
    return path


def test_globs_pair_shards_in_sorted_order_and_read_gzip(tmp_path: Path):
    for index in (2, 0, 1):
        write(tmp_path / f"train.{index}.xx.gz", [f"source {index} a", f"source {index} b"])
        write(tmp_path / f"train.{index}.yy.gz", [f"target {index} a", f"target {index} b"])
    files = ParallelFiles.from_patterns(
        [[str(tmp_path / "train.*.xx.gz"), str(tmp_path / "train.*.yy.gz")]], "train"
    )
    assert [Path(p).name for p in files.sources] == [f"train.{i}.xx.gz" for i in range(3)]
    assert [Path(p).name for p in files.targets] == [f"train.{i}.yy.gz" for i in range(3)]
    assert files.languages() == ("xx", "yy")
    pairs = list(iterate_pairs(files))
    assert pairs[0] == ("source 0 a", "target 0 a") and pairs[-1] == ("source 2 b", "target 2 b")


def test_several_pairs_of_files_add_up(tmp_path: Path):
    first = [write(tmp_path / "a.de", ["eins"]), write(tmp_path / "a.fr", ["un"])]
    second = [write(tmp_path / "b.de", ["zwei"]), write(tmp_path / "b.fr", ["deux"])]
    spec = files_spec([[str(p) for p in first], [str(p) for p in second]])
    assert (spec.source_lang, spec.target_lang) == ("de", "fr")
    assert spec.valid is None and spec.test is None  # held out later
    assert list(iterate_pairs(spec.train)) == [("eins", "un"), ("zwei", "deux")]


def test_a_glob_whose_sides_match_different_numbers_of_files_is_refused(tmp_path: Path):
    for name in ("t.1.en", "t.2.en", "t.1.de"):
        write(tmp_path / name, ["x"])
    with pytest.raises(ValueError, match=r"train: .*t\.\*\.en matches 2 files but .* matches 1"):
        ParallelFiles.from_patterns([[str(tmp_path / "t.*.en"), str(tmp_path / "t.*.de")]], "train")


@pytest.mark.parametrize("pattern", ["missing.en", "nothing.*.en"])
def test_missing_files_name_the_argument_and_the_file(tmp_path: Path, pattern: str):
    with pytest.raises(FileNotFoundError, match=rf"valid source: .*{pattern.replace('*', '.')}"):
        expand(str(tmp_path / pattern), "valid source")


def test_a_folder_is_not_a_corpus_file(tmp_path: Path):
    with pytest.raises(ValueError, match="is a folder"):
        expand(str(tmp_path), "train source")


def test_explicit_languages_win_over_the_suffixes(tmp_path: Path):
    files = [str(write(tmp_path / "a.txt", ["x"])), str(write(tmp_path / "b.txt", ["y"]))]
    assert files_spec([files]).source_lang is None
    spec = files_spec([files], source_lang="ja", target_lang="en")
    assert (spec.source_lang, spec.target_lang) == ("ja", "en")


def test_named_corpora_read_either_direction():
    forward = named_spec("generated", train_pairs=5)
    backward = named_spec("generated", train_pairs=5, source_lang="de")
    assert (backward.source_lang, backward.target_lang) == ("de", "en")
    assert backward.train == (forward.train[1], forward.train[0])
    with pytest.raises(ValueError, match="is en-de"):
        named_spec("generated", train_pairs=5, source_lang="fr")
