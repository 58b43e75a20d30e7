#!/usr/bin/env bash
# The lock: `constraints.txt` pins every package of the README's set-up command, transitive
# ones, pip, setuptools and wheel included, at versions that pass the test command. The
# README's set-up command and `.ci/run` install with it, so that a fresh machine gets the same
# versions a month from now; setup.cfg keeps compatible ranges for people who install the
# package into an environment of their own.
#
#   bash tools/lock.sh refresh   # newest versions the ranges allow, into a scratch environment;
#                                # rewrites constraints.txt from it (then run the test command
#                                # with the new lock before committing it)
#   bash tools/lock.sh drift     # newest versions into a scratch environment, then the quick
#                                # subset there, and what differs from the lock: drift found on
#                                # purpose, not by a user (not run by CI)
#
# Both need the package registries; the scratch environment is removed at the end (`--keep`
# keeps it and prints its path). Further arguments of `drift` go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
LOCK=constraints.txt

usage() {
  echo "usage: bash tools/lock.sh refresh|drift [--keep] [pytest arguments]" >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
action="$1"
shift
[[ "$action" == refresh || "$action" == drift ]] || usage
keep=0
if [[ "${1:-}" == "--keep" ]]; then
  keep=1
  shift
fi

scratch="$(mktemp -d)"
cleanup() {
  if [[ $keep == 1 ]]; then
    echo "[lock] the scratch environment is kept: $scratch/venv" >&2
  else
    rm -rf "$scratch"
  fi
}
trap cleanup EXIT

# The newest versions that setup.cfg's ranges allow: no constraints file.
echo "[lock] installing the newest versions into $scratch/venv ..." >&2
python3 -m venv "$scratch/venv"
"$scratch/venv/bin/python" -m pip install --quiet --upgrade pip setuptools wheel
"$scratch/venv/bin/python" -m pip install --quiet -e ".[dev]"
# --all: pip, setuptools and wheel too (the build of the editable install uses the last two);
# the package itself is left out. A local version label (torch's "+cpu") is dropped: the
# public version matches a build with or without one (PEP 440).
"$scratch/venv/bin/python" -m pip freeze --all --exclude-editable \
  | grep -v '^keras-attention-transformer' | sed -E 's/^([^=]+==[^+]+)\+.*/\1/' \
  | LC_ALL=C sort -f >"$scratch/newest.txt"

if [[ "$action" == refresh ]]; then
  python_version="$("$scratch/venv/bin/python" -c 'import platform; print(platform.python_version())')"
  {
    echo "# The lock: every package of \`pip install -e \".[dev]\"\`, at the versions that passed"
    echo "# the test command. Made by \`bash tools/lock.sh refresh\` on $(date -u +%Y-%m-%d),"
    echo "# Python $python_version, $(uname -s) $(uname -m). Used by the README's set-up command and"
    echo "# .ci/run (pip's -c and --build-constraint); setup.cfg keeps the compatible ranges."
    cat "$scratch/newest.txt"
  } >"$LOCK.new"
  mv "$LOCK.new" "$LOCK"
  echo "[lock] $LOCK rewritten ($(grep -vc '^#' "$LOCK") packages); against the committed lock:" >&2
  if git ls-files --error-unmatch "$LOCK" >/dev/null 2>&1; then
    git --no-pager diff -U0 -- "$LOCK" | grep -E '^[-+][^-+#]' >&2 || echo "  no version changed" >&2
  else
    echo "  no lock was committed: every line is new" >&2
  fi
  echo "[lock] now run the test command in an environment set up with it" >&2
  exit 0
fi

# drift: what the newest versions change, then the quick subset under them.
echo "[lock] packages whose newest version differs from the lock:" >&2
grep -v '^#' "$LOCK" | LC_ALL=C sort -f >"$scratch/locked.txt"
diff "$scratch/locked.txt" "$scratch/newest.txt" | grep -E '^[<>]' >&2 || echo "  none" >&2
echo "[lock] the quick subset under the newest versions:" >&2
PATH="$scratch/venv/bin:$PATH" VIRTUAL_ENV="$scratch/venv" bash tools/run_tests.sh --quick "$@"
