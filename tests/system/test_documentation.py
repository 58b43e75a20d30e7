"""The documentation site is whole: every public module of the package (and of the tools'
`keras_attention_cli`) has its `::: module` line in `docs/api/`, the modules whose names a
package's `__init__` exports come first on their page and never under its `## Internals`
heading, every page of `docs/` is in the navigation of `mkdocs.yml`, and the README links only
to pages that exist. The build
itself (`mkdocs build --strict`, broken links and references fail it) is the last line of
`tools/run_tests.sh`."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PACKAGES = ("keras_attention", "keras_attention_cli")
INTERNALS = re.compile(r"^## Internals\s*$", re.MULTILINE)
ENTRY = re.compile(r"^:::\s+([\w.]+)\s*$", re.MULTILINE)


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
        names |= set(ENTRY.findall(page.read_text("utf-8")))
    return names


def exported_modules(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> set[str]:
    """The modules whose names a package's `__init__` exports (has in its `__all__`): a
    module it imports such a name from (`from pkg.module import Name`), one it imports as such
    a name (`from pkg import module`), and one that its `lazy_names(__name__, module=[...])`
    call names. Read from the source, without importing anything."""
    modules = set()
    for package in packages:
        for init in (root / package).rglob("__init__.py"):
            name = ".".join(init.parent.relative_to(root).parts)
            tree = ast.parse(init.read_text("utf-8"))
            exported = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.List):
                    targets = [t for n in node.targets for t in getattr(n, "elts", [n])]
                    if any(getattr(t, "id", None) == "__all__" for t in targets):
                        exported |= {
                            e.value for e in node.value.elts if isinstance(e, ast.Constant)
                        }
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy_names":
                    modules |= {f"{name}.{keyword.arg}" for keyword in node.keywords}
                    for keyword in node.keywords:
                        exported |= {e.value for e in keyword.value.elts}
            for node in tree.body:
                if not (isinstance(node, ast.ImportFrom) and node.module):
                    continue
                for alias in node.names:
                    if (alias.asname or alias.name) not in exported:
                        continue
                    submodule = root.joinpath(*node.module.split("."), alias.name)
                    is_module = submodule.is_dir() or submodule.with_suffix(".py").is_file()
                    modules.add(f"{node.module}.{alias.name}" if is_module else node.module)
    return modules


def api_sections(page_text: str) -> tuple[list[str], list[str]]:
    """The `::: name` entries of an API page before its `## Internals` heading, and after."""
    parts = INTERNALS.split(page_text, maxsplit=1)
    return ENTRY.findall(parts[0]), (ENTRY.findall(parts[1]) if len(parts) > 1 else [])


def ordering_problems(public: list[str], internal: list[str], exported: set[str]) -> list[str]:
    """What is out of place on an API page whose entries are `public` (before `## Internals`,
    the package's own entry first) and `internal` (after it): an exported module listed after
    a module that is not exported, or under `## Internals`."""
    problems = [
        f"{name} is exported but under ## Internals" for name in internal if name in exported
    ]
    others = [name for name in public[1:] if name not in exported]
    if others:
        first_other = public.index(others[0])
        problems += [
            f"{name} is exported but comes after {others[0]}, which is not"
            for name in public[first_other:]
            if name in exported
        ]
    return problems


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


def test_exported_modules_come_first_and_internal_ones_last():
    exported = exported_modules()
    assert {
        "keras_attention.layers.multi_head_attention",  # from .module import Name
        "keras_attention.data.tokenizer",  # lazy_names(tokenizer=[...])
        "keras_attention.core.special_tokens",  # re-exported by keras_attention.data
        "keras_attention.masks",  # from keras_attention import masks
        "keras_attention.distribute.multi_worker",  # exported by training and distribute
    } <= exported
    assert (
        not {
            "keras_attention",
            "keras_attention.layers.initializers",
            "keras_attention.core.lazy_names",  # imported by data's __init__, not exported
        }
        & exported
    )
    internal = {}
    for page in (DOCS / "api").glob("*.md"):
        public, internal[page.name] = api_sections(page.read_text("utf-8"))
        problems = ordering_problems(public, internal[page.name], exported)
        assert problems == [], f"docs/api/{page.name}: {problems}"
    assert "keras_attention.layers.block_arguments" in internal["layers.md"]
    assert "keras_attention.core.checks" in internal["core.md"]


def test_the_order_check_finds_an_exported_module_out_of_place():
    exported = {"pkg.a", "pkg.b"}
    assert ordering_problems(["pkg", "pkg.a", "pkg.b", "pkg.c"], ["pkg.d"], exported) == []
    assert ordering_problems(["pkg", "pkg.a", "pkg.c", "pkg.b"], [], exported) == [
        "pkg.b is exported but comes after pkg.c, which is not"
    ]
    assert ordering_problems(["pkg", "pkg.a"], ["pkg.c", "pkg.b"], exported) == [
        "pkg.b is exported but under ## Internals"
    ]
    page = "# x\n\n::: pkg\n\n::: pkg.a\n\n## Internals\n\nText.\n\n::: pkg.c\n    options:\n"
    assert api_sections(page) == (["pkg", "pkg.a"], ["pkg.c"])
    assert api_sections("::: pkg\n") == (["pkg"], [])


def test_the_export_reader_reads_imports_all_and_lazy_names(tmp_path):
    files = {
        "pkg/__init__.py": (
            "from pkg.sub import exported_sub\nfrom pkg.helper import helper\n"
            "from pkg import mod\n__all__ = ['exported_sub', 'mod']\n"
        ),
        "pkg/mod.py": "",
        "pkg/sub/__init__.py": "",
        "pkg/helper.py": "",
        "pkg/lazy/__init__.py": "from x import lazy_names\n"
        "__getattr__, __dir__, __all__ = lazy_names(__name__, one=['A'])\n",
        "pkg/lazy/one.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert exported_modules(tmp_path, ("pkg",)) == {"pkg.sub", "pkg.mod", "pkg.lazy.one"}


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


def fit_examples(markdown: str) -> list[str]:
    """The Python code blocks of a Markdown text that call `model.fit`."""
    blocks = re.findall(r"^```python\n(.*?)^```", markdown, re.MULTILINE | re.DOTALL)
    return [block for block in blocks if "model.fit(" in block]


def test_the_readme_and_the_training_guide_show_the_same_model_fit_example():
    readme = fit_examples((ROOT / "README.md").read_text("utf-8"))
    guide = fit_examples((DOCS / "training.md").read_text("utf-8"))
    assert len(readme) == 1 and "compile_with_paper_recipe" in readme[0]
    assert guide == readme, "README.md and docs/training.md differ in their model.fit example"


@pytest.mark.parametrize("name", ["README.md"])
def test_the_readme_links_to_files_that_exist(name: str):
    text = (ROOT / name).read_text("utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert "docs/index.md" in local
    assert [t for t in local if not (ROOT / t).exists()] == []
