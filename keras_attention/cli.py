"""What the command-line tools share: user errors as one line, `error: ...`, exit status 2.

A user error (a bad argument, a missing or corrupt file, undecodable text) is not a bug, so it
gets no traceback: the tool prints one line naming the argument or the file and exits
non-zero. Anything else still raises, with its traceback, because it is a bug.
"""

import argparse
import sys
from typing import NoReturn

EXIT_USER_ERROR = 2


class UserError(Exception):
    """An error the user can fix; the message names the argument or file at fault."""


def fail(message: str) -> NoReturn:
    """Prints `error: message` on one line to stderr and exits with status 2."""
    text = " ".join(str(message).split())  # one line, whatever the message holds
    print(f"error: {text}", file=sys.stderr)
    sys.exit(EXIT_USER_ERROR)


class ArgumentParser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` whose errors are one line, `error: ...`, without the usage."""

    def error(self, message: str) -> NoReturn:
        fail(message)
