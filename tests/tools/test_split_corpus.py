"""`tools/split_corpus.py`: the topic and halves splits of the adaptation and
back-translation experiments, seeded, complete and disjoint; errors in one line."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "tools"))
import split_corpus

PAIRS = [(f"A dog runs {i}." if i % 3 == 0 else f"A cat sits {i}.", f"T {i}") for i in range(60)]


def write(folder: Path) -> tuple[str, str]:
    source, target = folder / "train.en", folder / "train.de"
    source.write_text("".join(s + "\n" for s, _ in PAIRS), encoding="utf-8")
    target.write_text("".join(t + "\n" for _, t in PAIRS), encoding="utf-8")
    return str(source), str(target)


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_topic_split_is_complete_disjoint_and_seeded(tmp_path: Path, capsys):
    source, target = write(tmp_path)
    argv = ["topic", "--source", source, "--target", target, "--words", "Dog",
            "--valid", "4", "--test", "5", "--output", str(tmp_path / "out")]  # fmt: skip
    assert split_corpus.main(argv) == 0
    out = tmp_path / "out"
    parts = {name: lines(out / f"{name}.en") for name in
             ("general", "in_domain.train", "in_domain.valid", "in_domain.test")}  # fmt: skip
    assert [len(parts[n]) for n in parts] == [40, 11, 4, 5]
    assert sorted(line for part in parts.values() for line in part) == sorted(s for s, _ in PAIRS)
    assert all("dog" in s for n, p in parts.items() if n != "general" for s in p)
    assert not any("dog" in s for s in parts["general"])
    pairs = dict(PAIRS)  # the target lines stay with their sources
    assert lines(out / "in_domain.test.de") == [pairs[s] for s in parts["in_domain.test"]]
    assert json.loads((out / "split.json").read_text())["sizes"]["in_domain.train"] == 11
    first = parts["in_domain.test"]
    assert split_corpus.main(argv) == 0  # the same seed, the same split
    assert lines(out / "in_domain.test.en") == first
    assert "in_domain.train: 11 lines" in capsys.readouterr().out


def test_halves_keep_half_parallel_and_the_other_halfs_targets(tmp_path: Path):
    source, target = write(tmp_path)
    argv = ["halves", "--source", source, "--target", target, "--output", str(tmp_path / "h")]
    assert split_corpus.main(argv) == 0
    parallel, monolingual = lines(tmp_path / "h/parallel.en"), lines(tmp_path / "h/monolingual.de")
    assert len(parallel) == len(monolingual) == 30
    held_back = lines(tmp_path / "h/held_back.en")
    assert sorted(parallel + held_back) == sorted(s for s, _ in PAIRS)
    pairs = dict(PAIRS)
    assert monolingual == [pairs[s] for s in held_back]


def test_errors_are_one_line(tmp_path: Path, capsys):
    source, _ = write(tmp_path)
    (tmp_path / "short.de").write_text("one\n", encoding="utf-8")
    argv = ["halves", "--source", source, "--target", str(tmp_path / "short.de"),
            "--output", str(tmp_path / "x")]  # fmt: skip
    with pytest.raises(SystemExit) as exit_info:
        split_corpus.main(argv)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == (
        f"error: --source {source} has 60 lines but --target {tmp_path / 'short.de'} has 1: "
        "the files must be aligned"
    )
    argv = ["topic", "--source", source, "--target", str(tmp_path / "train.de"),
            "--words", "zebra", "--output", str(tmp_path / "y")]  # fmt: skip
    with pytest.raises(SystemExit):
        split_corpus.main(argv)
    assert "--words zebra mark 0 pairs" in capsys.readouterr().err


def test_a_byte_order_mark_is_not_part_of_the_first_sentence(tmp_path: Path):
    source, target = write(tmp_path)
    Path(source).write_bytes("\ufeff".encode() + Path(source).read_bytes())
    argv = ["topic", "--source", source, "--target", target, "--words", "dog",
            "--valid", "3", "--test", "3", "--output", str(tmp_path / "t")]  # fmt: skip
    assert split_corpus.main(argv) == 0
    written = [line for path in (tmp_path / "t").glob("*.en") for line in lines(path)]
    assert PAIRS[0][0] in written and not any("\ufeff" in line for line in written)
