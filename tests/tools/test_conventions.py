"""The conventions every tool follows: `--run-dir` and `--output`, the old spellings as hidden
aliases with one deprecation line, a help text on every option, `main(argv) -> int`.

Cheap: the parsers are taken from the tools' `parse_args` before they parse, then parse here;
nothing loads a model or checks a file.
"""

import argparse
import importlib
from unittest import mock

import pytest

from keras_attention_cli.arguments import ArgumentParser
from keras_attention_cli.old_spellings import (
    OLD_SPELLINGS,
    POSITIONAL_RUN_DIR,
    deprecation_line,
    resolve_run_dir,
)

TOOLS = (
    "train", "translate", "evaluate", "export", "average_checkpoints", "convert_ctranslate2",
    "make_corpus_shards",
)  # fmt: skip
# tool -> (arguments with the new spellings, the same with the old ones, {attribute: value}).
SPELLINGS = {
    "train": (["--run-dir", "r"], ["--output-dir", "r"], {"output_dir": "r"}),
    "translate": (["--model", "m"], ["--saved-model", "m"], {"model": "m"}),
    "evaluate": (
        ["--model", "m", "--output", "h"],
        ["--saved-model", "m", "--hypotheses", "h"],
        {"model": "m", "output": "h"},
    ),
    "export": (
        ["--run-dir", "r", "--output", "o"],
        ["r", "--export-dir", "o"],
        {"run_dir": "r", "output": "o"},
    ),
    "average_checkpoints": (["--run-dir", "r"], ["r"], {"run_dir": "r"}),
    "convert_ctranslate2": (
        ["--run-dir", "r", "--output", "o"],
        ["r", "--output-dir", "o"],
        {"run_dir": "r", "output": "o"},
    ),
    "make_corpus_shards": (
        ["--pairs", "4", "--output", "o"],
        ["--pairs", "4", "--output-dir", "o"],
        {"output": "o"},
    ),
}


class ParserCapturedError(Exception):
    """Raised instead of parsing, carrying the parser."""


def tool_parser(tool: str) -> ArgumentParser:
    """The parser that `keras_attention_cli.commands.<tool>.parse_args` builds."""
    module = importlib.import_module(f"keras_attention_cli.commands.{tool}")

    def capture(self, *args, **kwargs):
        raise ParserCapturedError(self)

    with (
        mock.patch.object(ArgumentParser, "parse_args", capture),
        pytest.raises(ParserCapturedError) as info,
    ):
        module.parse_args([])
    return info.value.args[0]


def parse(tool: str, argv: list[str]) -> argparse.Namespace:
    """`argv` parsed by the tool's parser, the positional run folder resolved."""
    parser = tool_parser(tool)
    args = argparse.ArgumentParser.parse_args(parser, argv)
    if "old_run_dir" in vars(args):
        resolve_run_dir(parser, args)
    return args


def test_every_tool_is_covered():
    assert set(SPELLINGS) == set(OLD_SPELLINGS) == set(TOOLS)


@pytest.mark.parametrize("tool", TOOLS)
def test_the_new_spellings_parse_without_a_warning(tool: str, capsys):
    new, _, expected = SPELLINGS[tool]
    args = parse(tool, new)
    assert {name: getattr(args, name) for name in expected} == expected
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("tool", TOOLS)
def test_the_old_spellings_still_work_with_one_deprecation_line_each(tool: str, capsys):
    _, old, expected = SPELLINGS[tool]
    args = parse(tool, old)
    assert {name: getattr(args, name) for name in expected} == expected
    lines = capsys.readouterr().err.splitlines()
    used = [
        old_spelling
        for old_spelling in OLD_SPELLINGS[tool]
        if old_spelling in old or (old_spelling == POSITIONAL_RUN_DIR and old[0] == "r")
    ]
    expected_lines = [deprecation_line(name, OLD_SPELLINGS[tool][name]) for name in used]
    assert sorted(lines) == sorted(expected_lines)  # options while parsing, the folder after
    assert all(line.startswith("warning: ") and "deprecated" in line for line in lines)


@pytest.mark.parametrize("tool", TOOLS)
def test_the_old_spellings_are_hidden_from_help(tool: str):
    parser = tool_parser(tool)
    text = parser.format_help()
    for old in OLD_SPELLINGS[tool]:
        if old == POSITIONAL_RUN_DIR:
            assert "old_run_dir" not in text
        else:
            assert old not in text
    assert "--output" in text or tool == "train"
    assert "--run-dir" in text or tool == "make_corpus_shards"


def test_a_run_folder_given_twice_is_one_error_line(capsys):
    parser = tool_parser("export")
    args = argparse.ArgumentParser.parse_args(parser, ["r", "--run-dir", "s"])
    with pytest.raises(SystemExit) as exit_info:
        resolve_run_dir(parser, args)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: the run folder is given twice: --run-dir s and r"
    ]


@pytest.mark.parametrize("tool", TOOLS)
def test_every_option_has_a_help_text(tool: str):
    parser = tool_parser(tool)
    missing = [
        action.option_strings or [action.dest]
        for action in parser._actions
        if action.help != argparse.SUPPRESS and not (action.help or "").strip()
    ]
    assert missing == []
    # The check can fail: an option without help is found.
    _ = parser.add_argument("--undocumented")
    assert any(action.help is None for action in parser._actions)


@pytest.mark.parametrize("tool", TOOLS)
def test_main_is_an_entry_point(tool: str, capsys):
    main = importlib.import_module(f"keras_attention_cli.commands.{tool}").main
    assert main.__annotations__["return"] is int
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "usage:" in capsys.readouterr().out
