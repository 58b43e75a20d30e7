"""MkDocs hook: the docstrings' doctest examples (`>>>` lines and their output, as Keras writes
them, without a Markdown fence) become `pycon` code blocks in the API reference, instead of
nested block quotes whose `x["a"][0]` reads as a broken reference link."""

import re

import mkdocs.plugins
from markdown import Extension
from markdown.preprocessors import Preprocessor

PROMPT = re.compile(r"^(\s*)>>>( |$)")
FENCE = re.compile(r"^\s*(```|~~~)")


def fence_doctests(lines: list[str]) -> list[str]:
    """Wraps each run of doctest lines (a `>>>` line up to the next blank line) in a fence.

    >>> fence_doctests(["Text:", "", ">>> 1 + 1", "2", "", "More."])
    ['Text:', '', '```pycon', '>>> 1 + 1', '2', '```', '', 'More.']
    """
    out: list[str] = []
    fenced = False
    block: list[str] | None = None
    indent = ""
    for line in [*lines, ""]:
        if block is not None:
            if line.strip():
                block.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
                continue
            out += [f"{indent}```pycon", *(indent + b for b in block), f"{indent}```"]
            block = None
        if FENCE.match(line):
            fenced = not fenced
        match = None if fenced else PROMPT.match(line)
        if match:
            indent, block = match.group(1), [line[len(match.group(1)) :]]
        else:
            out.append(line)
    return out[:-1]


class _DoctestPreprocessor(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        return fence_doctests(lines)


class DoctestBlocks(Extension):
    def extendMarkdown(self, md) -> None:  # noqa: N802 (Markdown's name)
        # Before the fenced-code preprocessor (priority 25) turns fences into placeholders.
        md.preprocessors.register(_DoctestPreprocessor(md), "doctest_blocks", 30)


@mkdocs.plugins.event_priority(100)  # before mkdocstrings reads the Markdown extensions
def on_config(config):
    config.markdown_extensions.append(DoctestBlocks())
    return config
