"""The documentation site is whole: every public module of the package (and of the tools'
`keras_attention_cli`) has its `::: module` line in `docs/api/`, every page of `docs/` is in
the navigation of `mkdocs.yml`, and the README links only to pages that exist. The build
itself (`mkdocs build --strict`, broken links and references fail it) is the last line of
`tools/run_tests.sh`."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PACKAGES = ("keras_attention", "keras_attention_cli")


def public_modules(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> set[str]:
    """The dotted names of the packages' modules, a package by its own name; a module or
    package whose name starts with `_` (other than `__init__`) is private."""
    names = set()
    for package in packages:
        for path in (root / package).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if "__pycache__" not in parts and not any(p.startswith("_") for p in parts):
                names.add(".".join(parts))
    return names


def documented_modules(docs: Path = DOCS) -> set[str]:
    """The objects named by the `::: name` lines of the API pages."""
    names = set()
    for page in (docs / "api").glob("*.md"):
        names |= set(re.findall(r"^:::\s+([\w.]+)\s*$", page.read_text("utf-8"), re.MULTILINE))
    return names


def nav_pages(config_text: str) -> set[str]:
    """The `.md` paths that `mkdocs.yml`'s `nav` names (with or without a title)."""
    nav = config_text.split("\nnav:", 1)[1]
    return set(re.findall(r"^\s*-\s+(?:[^\n]*?:\s+)?([\w/.-]+\.md)\s*$", nav, re.MULTILINE))


def excluded_docs(config_text: str) -> list[str]:
    """The entries of `mkdocs.yml`'s `exclude_docs` (a folder ends with `/`): fragments that
    pages include, not pages of their own."""
    block = re.search(r"^exclude_docs: \|\n((?:[ ]+\S[^\n]*\n)+)", config_text, re.MULTILINE)
    return block.group(1).split() if block else []


def is_excluded(page: str, entries: list[str]) -> bool:
    return any(page.startswith(e) if e.endswith("/") else page == e for e in entries)


def test_every_public_module_has_an_api_entry():
    modules = public_modules()
    assert {"keras_attention", "keras_attention.layers.multi_head_attention"} <= modules
    assert "keras_attention_cli.arguments" in modules
    missing = sorted(modules - documented_modules())
    assert missing == [], f"add `::: <module>` lines for these to a page of docs/api/: {missing}"


def test_api_entries_name_only_modules_that_exist():
    stale = sorted(documented_modules() - public_modules())
    assert stale == [], f"docs/api/ names modules that no longer exist: {stale}"


def test_the_module_walk_finds_a_new_module_and_skips_private_ones(tmp_path):
    for name in ("pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/new.py", "pkg/_private.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert public_modules(tmp_path, ("pkg",)) == {"pkg", "pkg.sub", "pkg.sub.new"}
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "x.md").write_text("# x\n\n::: pkg\n\n::: pkg.sub\n")
    assert public_modules(tmp_path, ("pkg",)) - documented_modules(tmp_path) == {"pkg.sub.new"}


def test_every_page_is_in_the_navigation():
    config = (ROOT / "mkdocs.yml").read_text("utf-8")
    excluded = excluded_docs(config)
    assert "paper/sweep/" in excluded
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    pages = {page for page in pages if not is_excluded(page, excluded)}
    assert {"index.md", "api/index.md", "experiments/multi30k-en-de.md"} <= pages
    listed = nav_pages(config)
    assert sorted(pages - listed) == [], "pages missing from mkdocs.yml's nav"
    assert sorted(listed - pages) == [], "mkdocs.yml's nav names pages that do not exist"


def test_the_navigation_parser_reads_titled_and_untitled_entries():
    text = "site_name: x\nnav:\n  - Home: index.md\n  - Part:\n      - part/index.md\n"
    assert nav_pages(text) == {"index.md", "part/index.md"}


def test_excluded_fragments_are_read_from_the_configuration():
    entries = excluded_docs("site_name: x\nexclude_docs: |\n  hooks/\n  paper/a.md\ntheme:\n")
    assert entries == ["hooks/", "paper/a.md"]
    assert is_excluded("hooks/x.md", entries) and is_excluded("paper/a.md", entries)
    assert not is_excluded("paper/claims.md", entries)


@pytest.mark.parametrize("name", ["README.md"])
def test_the_readme_links_to_files_that_exist(name: str):
    text = (ROOT / name).read_text("utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert "docs/index.md" in local
    assert [t for t in local if not (ROOT / t).exists()] == []
