"""The slow-test list (`tests/slow_tests.txt`), which marks the tests the quick subset leaves
out: every entry names a test that exists, so that a renamed test is not silently quick."""

import ast
from pathlib import Path

from tests.conftest import SLOW_TESTS, measured_seconds

ROOT = Path(__file__).resolve().parents[2]


def test_every_listed_slow_test_exists():
    missing = []
    defined: dict[str, set[str]] = {}
    for node_id in measured_seconds():
        path, name = node_id.split("::", 1)
        if path not in defined:
            file = ROOT / path
            tree = ast.parse(file.read_text(encoding="utf-8")) if file.exists() else ast.Module([])
            defined[path] = {
                node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
            }
        if name.split("[", 1)[0] not in defined[path]:
            missing.append(node_id)
    assert not missing, f"{SLOW_TESTS.name} names tests that do not exist: {missing[:5]}"


def test_the_list_is_read_as_seconds_and_test_ids(tmp_path):
    listing = tmp_path / "slow.txt"
    listing.write_text("# a comment\n\n2.5 tests/a/test_b.py::test_c[x y]\n", encoding="utf-8")
    assert measured_seconds(listing) == {"tests/a/test_b.py::test_c[x y]": 2.5}
