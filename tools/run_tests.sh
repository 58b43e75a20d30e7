#!/usr/bin/env bash
# The test command: the whole suite under TensorFlow, the package's docstring examples as
# doctests, then the backend-agnostic tests (core, layers, masks, the Transformer, a model.fit
# and the searches) under PyTorch and JAX, then the documentation site. The TensorFlow suite
# runs in three processes (pytest-xdist), a test file per process at a time, so that a file's
# module fixtures are built once: a third process keeps both cores busy while another waits
# on a subprocess (measured on 2 cores: 17.4 min against 18.6 with two, fresh clones of one
# day; 5% faster on a subset on another day). Each phase prints its time on stderr,
# `[run_tests] ...`.
# Every phase runs, whatever the others did: a failing phase does not hide the later ones'
# results. The command ends with a summary of each phase's result and time, and fails (exit 1)
# if any phase failed, naming them.
# `--quick`: the quick subset, every test not marked `slow` (each module's fast tests) under
# TensorFlow only; for the edit-test loop, not instead of the whole command.
set -uo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "--quick" ]]; then
  shift
  KERAS_BACKEND=tensorflow exec python -m pytest -q -n 2 --dist loadfile -m "not slow" tests "$@"
fi
start=$SECONDS
summary=()
failed=()
timed() {  # timed NAME COMMAND...: runs the command, prints how long it took, records its result
  local name="$1" begin=$SECONDS status=0
  shift
  "$@" || status=$?
  local seconds=$((SECONDS - begin)) total=$((SECONDS - start)) result="passed"
  if [[ $status != 0 ]]; then
    result="FAILED (exit $status)"
    failed+=("$name")
  fi
  summary+=("$(printf '%-20s %-16s %d:%02d' "$name" "$result" $((seconds / 60)) $((seconds % 60)))")
  printf '[run_tests] %s: %s, %d:%02d (total %d:%02d)\n' "$name" "$result" $((seconds / 60)) \
    $((seconds % 60)) $((total / 60)) $((total % 60)) >&2
}
# The slowest tests are listed (--durations) so that the suite's time can be kept in check.
KERAS_BACKEND=tensorflow timed "TensorFlow suite" python -m pytest -q -n 3 --dist loadfile \
  --no-loadscope-reorder --durations=20 tests "$@"
# The docstring examples of the package and of the tools' own, as doctests (set-up: conftest.py),
# in two processes (each trains the examples' tiny run once, about 10 s).
KERAS_BACKEND=tensorflow timed "doctests" python -m pytest -q -n 2 --doctest-modules \
  keras_attention keras_attention_cli "$@"
AGNOSTIC=(tests/core tests/layers tests/decoding tests/test_masks.py tests/models/test_transformer.py
  tests/models/test_deferred_collection.py tests/training/test_memorize.py)
# PyTorch's CPU kernels run on OpenMP threads, as many as cores in each process, which spin
# while they wait: with two processes on two cores and tiny tensors, one thread each does
# the same work with less than half the CPU time (measured side by side: 102 s and 184 CPU-s
# by default, 42 s and 77 CPU-s with one thread). A given OMP_NUM_THREADS is kept.
OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" KERAS_BACKEND=torch timed "PyTorch" python -m pytest -q \
  -n 2 "${AGNOSTIC[@]}" "$@"
# JAX compiles every op and loop for every new shape, and the tests' tensors are tiny, so
# compiling costs more than running: XLA's LLVM optimisation is off (its HLO passes stay) and
# the two processes share their compiled programs through a cache of this run only (measured
# on the JAX phase, 2 cores: 476 CPU-s by default, 380 without LLVM optimisation, 362 with the
# shared cache too; 406, 343 and 306 s of wall time).
jax_cache="$(mktemp -d)"
XLA_FLAGS="--xla_backend_optimization_level=0 ${XLA_FLAGS:-}" JAX_COMPILATION_CACHE_DIR="$jax_cache" \
  JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0 \
  KERAS_BACKEND=jax timed "JAX" python -m pytest -q -n 2 --durations=10 "${AGNOSTIC[@]}" "$@"
rm -rf "$jax_cache"
# The documentation site, strict: a broken link, anchor or API reference, or a docstring that
# griffe warns about, fails the command. Not `--quiet`: it drops warnings before strict mode
# counts them, so nothing could fail; MkDocs's INFO lines are left out of the output instead.
docs_site() {
  local site
  site="$(mktemp -d)"
  NO_MKDOCS_2_WARNING=1 python -m mkdocs build --strict -d "$site" 2>&1 | grep -v '^INFO '
  local status=${PIPESTATUS[0]}
  rm -rf "$site"
  return "$status"
}
timed "documentation site" docs_site
echo "[run_tests] summary:" >&2
printf '[run_tests]   %s\n' "${summary[@]}" >&2
total=$((SECONDS - start))
if [[ ${#failed[@]} -gt 0 ]]; then
  names="${failed[0]}"
  for name in "${failed[@]:1}"; do names+=", $name"; done
  printf '[run_tests] FAILED phases: %s (total %d:%02d)\n' "$names" $((total / 60)) $((total % 60)) >&2
  exit 1
fi
printf '[run_tests] every phase passed (total %d:%02d)\n' $((total / 60)) $((total % 60)) >&2
