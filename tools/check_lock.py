"""Checks that the environment holds exactly the lock's versions.

    python tools/check_lock.py constraints.txt

Every installed distribution but the project itself must be in the lock at its version (a
local label such as torch's `+cpu` aside), and every locked one installed. `.ci/run` runs it
after the set-up command, so that a package that came in from outside the lock, or at another
version, is named before the tests run. Prints `error: ...` lines and exits 1 on a difference.
"""

import argparse
import re
import sys
from importlib import metadata
from pathlib import Path

PROJECT = "keras-attention-transformer"


def normalise(name: str) -> str:
    """A distribution's name as PEP 503 compares it: `Typing_Extensions` -> `typing-extensions`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def public_version(version: str) -> str:
    """`2.13.0+cpu` -> `2.13.0`: a local label is not part of the version the lock gives."""
    return version.split("+", 1)[0]


def read_lock(path: Path) -> dict[str, str]:
    """The lock's `name==version` lines by normalised name; comments and blank lines skipped.

    Raises:
        ValueError: naming the line that is not `name==version`.
    """
    locked = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^=\s;]+)", line)
        if match is None:
            raise ValueError(f"{path}:{number}: not a `name==version` line: {line!r}")
        locked[normalise(match[1])] = public_version(match[2])
    return locked


def installed_versions() -> dict[str, str]:
    """Every distribution of this environment by normalised name, but the project itself."""
    found = {}
    for distribution in metadata.distributions():
        name = normalise(distribution.metadata["Name"])
        if name != PROJECT:
            found[name] = public_version(distribution.version)
    return found


def differences(installed: dict[str, str], locked: dict[str, str]) -> list[str]:
    """One line for each package that is not at the lock's version, sorted by name.

    Example:

    >>> installed = {"numpy": "2.4.6", "six": "1.17.0"}
    >>> for line in differences(installed, {"numpy": "2.4.5", "keras": "3.15.1"}):
    ...     print(line)
    keras: locked at 3.15.1, not installed
    numpy: 2.4.6 installed, locked at 2.4.5
    six: 1.17.0 installed, not in the lock
    """
    lines = []
    for name in sorted(installed.keys() | locked.keys()):
        have, want = installed.get(name), locked.get(name)
        if want is None:
            lines.append(f"{name}: {have} installed, not in the lock")
        elif have is None:
            lines.append(f"{name}: locked at {want}, not installed")
        elif have != want:
            lines.append(f"{name}: {have} installed, locked at {want}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lock", type=Path, help="the constraints file (constraints.txt)")
    args = parser.parse_args(argv)
    try:
        locked = read_lock(args.lock)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        print(f"error: lock {args.lock}: {error}", file=sys.stderr)
        return 1
    lines = differences(installed_versions(), locked)
    for line in lines:
        print(f"error: {line}", file=sys.stderr)
    if lines:
        print(f"error: the environment differs from {args.lock} in {len(lines)} packages")
        return 1
    print(f"check_lock: every one of {len(locked)} packages at the version of {args.lock}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
