"""`keras_attention_cli.commands.export` as a script: see that module for the command.

    python tools/export.py --help

The same as the console script `keras-attention-export`. Run from a checkout, it
imports the checkout's packages.
"""

import sys
from pathlib import Path

CHECKOUT = str(Path(__file__).resolve().parents[1])
if CHECKOUT not in sys.path:
    sys.path.insert(0, CHECKOUT)  # the checkout's packages, not another installed copy

from keras_attention_cli.commands.export import main, parse_args  # noqa: E402, F401

if __name__ == "__main__":
    sys.exit(main())
