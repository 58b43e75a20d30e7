"""A path that TensorFlow reads as itself, whatever characters it holds (`literal_path`).

TensorFlow's checkpoint readers (`tf.saved_model.load`, `tf.train.load_checkpoint`,
`tf.train.Checkpoint.read`) look their files up with `Env::GetMatchingPaths`, which reads the
path as a glob pattern (`fnmatch`): a folder named `run [1]` is the pattern of `run 1` and
its own files are not found ("Failed to find any matching files"), and a backslash escapes
the next character. `*` and `?` match themselves, but also other names. The same path then
goes, unchanged, to functions that read it literally, so escaping it cannot serve both:
`literal_path` gives TensorFlow instead a symlink, in a fresh temporary folder, whose path
holds none of these characters. Everything else that TensorFlow and Keras read or write
(`tf.io.gfile`, `tf.data.TextLineDataset`, summary writers, `.keras` and `.weights.h5`
files, saving a SavedModel) takes paths literally, spaces, quotes and non-ASCII included.
"""

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator

# What TensorFlow's pattern matching does not read as itself (`IsGlobbingPattern`).
PATTERN_TEXT = "*?[\\"
PATTERN_CHARACTERS = frozenset(PATTERN_TEXT)


def is_literal(path: str | os.PathLike) -> bool:
    """Whether TensorFlow's pattern matching reads `path` as itself (no `*?[\\`)."""
    return not PATTERN_CHARACTERS.intersection(os.fspath(path))


def _unreadable(path: str, why: str) -> OSError:
    return OSError(
        f"cannot read {path} with TensorFlow, which takes the characters {PATTERN_TEXT} "
        f"for a pattern: {why}"
    )


@contextlib.contextmanager
def literal_path(path: str | os.PathLike) -> Iterator[str]:
    """A name of `path` for TensorFlow's checkpoint readers: a file, a folder (a SavedModel)
    or a checkpoint's prefix (`.../variables`, the start of its files' names).

    `path` itself when it holds no pattern character, else the same path through a symlink
    in a temporary folder (to `path`, or to the folder of a prefix), removed when the block
    ends: read the files inside it (`tf.saved_model.load` reads a SavedModel's variables as
    it loads; a `tf.train.load_checkpoint` reader reads its data files when asked).

    Args:
        path: the file, folder or checkpoint prefix TensorFlow will read.

    Yields:
        A path to give TensorFlow instead of `path`.

    Raises:
        OSError: naming `path` if it cannot be named so (a prefix whose own name holds a
            pattern character, a temporary folder whose path holds one, no symlinks).
    """
    text = os.fspath(path)
    if is_literal(text):
        yield text
        return
    absolute = os.path.abspath(text)
    # A prefix names no file: its folder is linked, and its name must be literal itself.
    target, name = (absolute, "") if os.path.exists(absolute) else os.path.split(absolute)
    if not is_literal(name):
        raise _unreadable(text, f"neither {name} nor its folder exists as a whole")
    folder = tempfile.mkdtemp(prefix="keras-attention-path-")
    try:
        link = os.path.join(folder, "path")
        if not is_literal(link):
            raise _unreadable(text, f"the temporary folder {folder} holds one too (set TMPDIR)")
        try:
            os.symlink(target, link)
        except OSError as error:
            raise _unreadable(text, f"cannot link it from {link}: {error.strerror}") from None
        yield os.path.join(link, name) if name else link
    finally:
        shutil.rmtree(folder, ignore_errors=True)
