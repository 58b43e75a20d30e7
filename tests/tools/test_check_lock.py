"""The lock (`constraints.txt`) and its check (`tools/check_lock.py`): every package the
set-up installs is pinned at a version inside setup.cfg's ranges, the README's set-up command
and CI install with it, and the check names each package off the lock."""

import re
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from setuptools.config.setupcfg import read_configuration

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "constraints.txt"
sys.path.insert(0, str(ROOT / "tools"))
from check_lock import differences, main, normalise, read_lock  # noqa: E402

sys.path.remove(str(ROOT / "tools"))


@pytest.fixture(scope="module")
def locked() -> dict[str, str]:
    return read_lock(LOCK)


def setup_requirements() -> list[Requirement]:
    """The plain install's requirements and those of every extra."""
    options = read_configuration(str(ROOT / "setup.cfg"))["options"]
    lines = list(options["install_requires"])
    for extra in options["extras_require"].values():
        lines += extra
    return [Requirement(line) for line in lines]


def test_every_requirement_of_setup_cfg_is_locked_inside_its_range(locked):
    for requirement in setup_requirements():
        name = normalise(requirement.name)
        assert name in locked, f"{requirement} is not in {LOCK.name}"
        version = locked[name]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{LOCK.name} pins {name}=={version}, outside setup.cfg's {requirement}"
        )


def test_the_lock_pins_the_installers_own_packages_and_one_version_each(locked):
    assert {"pip", "setuptools", "wheel"} <= set(locked)
    names = [
        normalise(line.split("==")[0])
        for line in LOCK.read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    ]
    assert len(names) == len(set(names)) == len(locked)


def test_the_readme_set_up_command_and_ci_install_with_the_lock():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    set_up = re.search(r"## Set up \(one command\)\n+```bash\n(.+?)\n```", readme, re.DOTALL)
    assert set_up, "README has no set-up command block"
    command = set_up[1]
    assert command.count("-c constraints.txt") >= 2, command  # pip itself, then the package
    assert 'pip install -c constraints.txt --build-constraint constraints.txt -e ".[dev]"' in (
        command
    )
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install -c constraints.txt --build-constraint constraints.txt -e ".[dev]"' in ci
    assert "python tools/check_lock.py constraints.txt" in ci


def test_differences_name_each_package_off_the_lock():
    installed = {"numpy": "2.4.6", "torch": "2.13.0", "six": "1.17.0"}
    locked = {"numpy": "2.4.5", "torch": "2.13.0", "keras": "3.15.1"}
    assert differences(installed, locked) == [
        "keras: locked at 3.15.1, not installed",
        "numpy: 2.4.6 installed, locked at 2.4.5",
        "six: 1.17.0 installed, not in the lock",
    ]
    assert differences(locked, locked) == []


def test_a_lock_line_that_is_not_a_pin_is_named(tmp_path: Path, capsys):
    lock = tmp_path / "constraints.txt"
    lock.write_text("# a comment\nnumpy==2.4.6\nkeras>=3.8\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"constraints.txt:3: not a `name==version` line"):
        read_lock(lock)
    assert main([str(lock)]) == 1
    assert capsys.readouterr().err.startswith("error: lock ")


def test_local_labels_and_name_spellings_are_the_same_package(tmp_path: Path):
    lock = tmp_path / "constraints.txt"
    lock.write_text("Typing_Extensions==4.16.0\ntorch==2.13.0+cpu\n", encoding="utf-8")
    assert read_lock(lock) == {"typing-extensions": "4.16.0", "torch": "2.13.0"}


def test_this_environment_is_checked_against_a_lock(tmp_path: Path, capsys):
    """The check run on this environment: a lock missing one installed package fails, naming
    it (the suite may run outside the lock's environment, so only that one is asserted)."""
    lock = tmp_path / "constraints.txt"
    lock.write_text("a-package-nobody-installs==1.0\n", encoding="utf-8")
    assert main([str(lock)]) == 1
    err = capsys.readouterr().err
    assert "error: a-package-nobody-installs: locked at 1.0, not installed" in err
    assert "error: pytest: " in err  # installed, not in that lock
