"""Telling a failure of the machine's storage (a full disk, a read-only or forbidden folder,
a broken device) from a bug, and describing it in one line that names the file.

Python raises these as `OSError` with an `errno`; h5py as `OSError` or `RuntimeError` whose
text holds the file name and errno; TensorFlow as an `OpError` (not an `OSError`) whose
message holds the operating system's words. `storage_error_line` reads all three and
returns `None` for anything else, which the tools then treat as a bug (with its traceback).
"""

import errno
import re

STORAGE_ERRNOS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large for this file system or process (file size limit)",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EIO: "input/output error of the device",
}
# The operating system's words for the same causes, as TensorFlow's messages quote them.
STORAGE_WORDS = {
    "No space left on device": errno.ENOSPC,
    "Disk quota exceeded": errno.EDQUOT,
    "File too large": errno.EFBIG,
    "Read-only file system": errno.EROFS,
    "Permission denied": errno.EACCES,
    "Input/output error": errno.EIO,
}
_H5_FILE = re.compile(r"filename = '([^']*)'")
_H5_ERRNO = re.compile(r"errno = (\d+)")
# An absolute path that starts a word (TensorFlow's device names hold "/job:...", not a file).
_PATH = re.compile(r"""(?:^|[\s'"])(/[^'":;\s]+)""")


def _reports_io(error: BaseException) -> bool:
    """Whether `error` is of a kind whose message may quote an I/O failure: `OSError` and
    `RuntimeError` (h5py's) or TensorFlow's `OpError`."""
    return isinstance(error, OSError | RuntimeError) or type(error).__module__.startswith(
        "tensorflow"
    )


def _errno_of(error: BaseException) -> int | None:
    number = getattr(error, "errno", None)
    if isinstance(number, int) and number in STORAGE_ERRNOS:
        return number
    if not _reports_io(error):
        return None
    text = str(error)
    match = _H5_ERRNO.search(text)
    if match and int(match.group(1)) in STORAGE_ERRNOS:
        return int(match.group(1))
    for words, code in STORAGE_WORDS.items():
        if words in text:
            return code
    return None


def _file_of(error: BaseException) -> str | None:
    name = getattr(error, "filename", None)
    if name:
        return str(name)
    text = str(error)
    match = _H5_FILE.search(text) or _PATH.search(text)
    return match.group(1) if match else None


def storage_error_line(error: BaseException) -> str | None:
    """One line naming the file and the cause if `error` is a storage failure, else `None`.

    An error is a storage failure when its errno (or the operating system's words in its
    message) is one of `STORAGE_ERRNOS`; the error itself, or one it was raised from, may
    carry it.

    Example:

    >>> storage_error_line(OSError(28, "No space left on device", "run/model.keras"))
    'run/model.keras: no space left on the device (errno 28, ENOSPC)'
    >>> storage_error_line(ValueError("bad value")) is None
    True
    """
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        number = _errno_of(error)
        if number is not None:
            where = _file_of(error) or "a file"
            return f"{where}: {STORAGE_ERRNOS[number]} (errno {number}, {errno.errorcode[number]})"
        error = error.__cause__ or error.__context__
    return None
