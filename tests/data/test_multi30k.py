"""Multi30k English-German: the shared local files and the cached download (offline, file://)."""

import gzip
import re
from pathlib import Path

import pytest

from keras_attention.data.multi30k import load_multi30k
from tests.shared_data import MULTI30K_DIR, needs_multi30k

# Split sizes published with the corpus (its README; torchtext and Hugging Face agree).
SPLIT_SIZES = {"train": 29000, "val": 1014, "test": 1000}
LOCAL_STEMS = {"train": "train", "val": "val", "test": "test2016"}
REMOTE_STEMS = {"train": "train", "val": "val", "test": "test_2016_flickr"}


def first_line(path: Path) -> str:
    """Line 1 of a UTF-8 file, without its line ending."""
    with path.open(encoding="utf-8", newline="") as handle:
        return handle.readline().rstrip("\r\n")


def fake_lines(split: str, language: str) -> list[str]:
    """Distinct small sentences for one split and language (with umlauts, for UTF-8)."""
    return [f"{split} {language} Satz {i} mit Ümlaut ä" for i in range(3 + len(split))]


def write_fake_origin(origin: Path) -> None:
    """Gzipped fake files named like the remote ones (`train.en.gz`, `test_2016_flickr.de.gz`)."""
    origin.mkdir(parents=True, exist_ok=True)
    for split, remote in REMOTE_STEMS.items():
        for language in ("en", "de"):
            text = "".join(line + "\n" for line in fake_lines(split, language))
            with gzip.open(origin / f"{remote}.{language}.gz", "wb") as handle:
                handle.write(text.encode("utf-8"))


@pytest.fixture(scope="module")
def english_german():
    return load_multi30k(MULTI30K_DIR)


@needs_multi30k
@pytest.mark.parametrize("split", list(SPLIT_SIZES))
def test_local_splits_have_published_sizes_and_match_the_files(english_german, split):
    sources, targets = english_german[split]
    assert len(sources) == len(targets) == SPLIT_SIZES[split]
    assert all(isinstance(s, str) and s.strip() for s in sources + targets)
    stem = LOCAL_STEMS[split]
    assert sources[0] == first_line(MULTI30K_DIR / f"{stem}.en")
    assert targets[0] == first_line(MULTI30K_DIR / f"{stem}.de")


@needs_multi30k
def test_german_source_swaps_the_sides(english_german):
    german_english = load_multi30k(MULTI30K_DIR, source_language="de")
    assert set(german_english) == set(english_german) == set(SPLIT_SIZES)
    for split, (sources, targets) in english_german.items():
        assert german_english[split] == (targets, sources)


@pytest.mark.parametrize("language", ["fr", "EN", "", "english"])
def test_unknown_source_language_raises(language, tmp_path):
    with pytest.raises(ValueError, match="source_language"):
        load_multi30k(tmp_path, source_language=language)


def test_missing_local_file_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "train.en"))):
        load_multi30k(tmp_path)


@pytest.mark.parametrize("source_language", ["en", "de"])
def test_download_reads_the_gzipped_files_and_then_uses_the_cache(tmp_path, source_language):
    origin = tmp_path / "origin"
    write_fake_origin(origin)
    cache_dir = tmp_path / "cache"  # does not exist yet
    target_language = "de" if source_language == "en" else "en"
    expected = {
        split: (fake_lines(split, source_language), fake_lines(split, target_language))
        for split in REMOTE_STEMS
    }
    load = {
        "origin": "file://" + str(origin) + "/",
        "cache_dir": str(cache_dir),
        "source_language": source_language,
    }

    assert load_multi30k(**load) == expected
    cached = cache_dir / "multi30k"
    for stem in LOCAL_STEMS.values():
        for language in ("en", "de"):
            assert (cached / f"{stem}.{language}").is_file()
    assert not [p.name for p in cached.iterdir() if p.name.endswith(".tmp")]

    for archive in origin.iterdir():
        archive.unlink()
    assert load_multi30k(**load) == expected


def test_download_base_url_without_trailing_slash(tmp_path):
    write_fake_origin(tmp_path / "origin")
    splits = load_multi30k(
        origin="file://" + str(tmp_path / "origin"), cache_dir=str(tmp_path / "cache")
    )
    assert splits["test"] == (fake_lines("test", "en"), fake_lines("test", "de"))
