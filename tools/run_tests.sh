#!/usr/bin/env bash
# The test command: the whole suite under TensorFlow, then the layer tests under PyTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
KERAS_BACKEND=tensorflow python -m pytest -q tests "$@"
KERAS_BACKEND=torch python -m pytest -q tests/core tests/layers tests/test_masks.py "$@"
