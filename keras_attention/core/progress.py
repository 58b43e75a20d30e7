"""Progress of long work on one line of stderr, rewritten in place, only at a terminal.

The tools show it while translating a file, scoring, choosing weights and exporting
(`Progress` counts sentences; `working` names a step that has no count, such as an export). When
stderr is not a terminal (a log file, a pipe, a test), `Progress` writes nothing at all, so
the tools' logs keep only their results. Standard library only (no tqdm).
"""

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import TextIO


class Progress:
    """A counter of work done, shown as `label: done/total unit (percent, rate)` on stderr.

    Silent unless its stream is a terminal. The line is redrawn at most every
    `min_interval` seconds and ended (with a newline) by `close` or the `with` block's end.

    Args:
        label: what is being done, e.g. `"translating"`.
        total: how much there is to do, or `None` if unknown.
        unit: what is counted, e.g. `"sentences"`.
        stream: where to write (default: `sys.stderr` when the progress starts).
        min_interval: the least seconds between two redraws.
        enabled: `False` keeps it silent even at a terminal (e.g. when the results go to
            the same terminal).

    Example:

    >>> import io
    >>> with Progress("translating", total=3, stream=io.StringIO()) as progress:
    ...     progress.update(3)
    >>> progress.done, progress.shown
    (3, False)
    """

    def __init__(
        self,
        label: str,
        total: int | None = None,
        unit: str = "sentences",
        stream: TextIO | None = None,
        min_interval: float = 0.2,
        enabled: bool = True,
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.stream = sys.stderr if stream is None else stream
        self.min_interval = min_interval
        self.done = 0
        self.shown = False
        self.started = time.monotonic()
        self.last_drawn = float("-inf")
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = enabled and bool(isatty and isatty())

    def line(self) -> str:
        """The text of the progress line, e.g. `translating: 32/64 sentences (50%, 8.0/s)`.

        Example:

        >>> progress = Progress("scoring", total=4)
        >>> progress.done = 1
        >>> progress.line().split(" (")[0]
        'scoring: 1/4 sentences'
        """
        seconds = max(time.monotonic() - self.started, 1e-9)
        if self.total:
            count = f"{self.done}/{self.total} {self.unit} ({100 * self.done / self.total:.0f}%, "
        else:
            count = f"{self.done} {self.unit} ("
        return f"{self.label}: {count}{self.done / seconds:.1f}/s)"

    def update(self, count: int = 1) -> None:
        """Counts `count` more units done; redraws the line if it is time."""
        self.done += count
        now = time.monotonic()
        if self.enabled and now - self.last_drawn >= self.min_interval:
            self._draw()
            self.last_drawn = now

    def _draw(self) -> None:
        self.stream.write("\r\x1b[K" + self.line())  # back to the line's start, cleared
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        """Draws the final count and ends the line (nothing if nothing was shown)."""
        if self.enabled and (self.shown or self.done):
            self._draw()
            self.stream.write("\n")
            self.stream.flush()
        self.enabled = False

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def counted(translate: Callable, progress: Progress) -> Callable:
    """`translate` (called with `sentences=`, a batch) counting each batch's sentences in
    `progress`, e.g. for `keras_attention.evaluation.translate_all`.

    Example:

    >>> progress = Progress("translating")
    >>> counted(lambda sentences: sentences, progress)(sentences=["a", "b"])
    ['a', 'b']
    >>> progress.done
    2
    """

    def call(sentences):
        result = translate(sentences=sentences)
        progress.update(len(sentences))
        return result

    return call


@contextlib.contextmanager
def working(label: str, stream: TextIO | None = None) -> Iterator[None]:
    """At a terminal, `label ...` on stderr while the block runs, then `label: 12.3 s`.

    For work without a count (an export). Silent when the stream is not a terminal; the
    line is ended whether the block succeeds or raises.

    Example:

    >>> import io
    >>> stream = io.StringIO()
    >>> with working("exporting", stream):
    ...     pass
    >>> stream.getvalue()
    ''
    """
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    shown = bool(isatty and isatty())
    started = time.monotonic()
    if shown:
        stream.write(f"{label} ...")
        stream.flush()
    try:
        yield
    finally:
        if shown:
            stream.write(f"\r\x1b[K{label}: {time.monotonic() - started:.1f} s\n")
            stream.flush()
