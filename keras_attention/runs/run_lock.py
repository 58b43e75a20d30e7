"""One run per folder at a time: an exclusive lock on a run folder (`lock_run_folder`).

The lock is `fcntl.flock` on the file `.lock` inside the folder, which holds who took it
(process id, host and start time, as one line of JSON) for the message of a process that is
refused. The kernel releases a `flock` when its process ends, however it ends: a SIGKILLed run
leaves at most a stale `.lock` file, which the next run locks again. A lock is released, and
its file removed, when its `RunLock` is released or garbage-collected, or at the latest when
the process exits normally.

Within one process, locking a folder again returns the lock the process already holds (a
resumed run in the same interpreter, say after an error); the lock refuses other processes.

Limits: `flock` works on local filesystems and on NFS (Linux emulates it with byte-range
locks); a filesystem without it (some Lustre or FUSE mounts) gets a warning and no lock.
Without `fcntl` (Windows) no lock is taken at all: two runs on one folder are not refused.
"""

import contextlib
import datetime
import errno
import json
import logging
import os
import socket
import weakref
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

logger = logging.getLogger(__name__)

LOCK_FILE = ".lock"
# Locks this process holds, by the folder's real path: locking one again returns it.
_held: "weakref.WeakValueDictionary[str, RunLock]" = weakref.WeakValueDictionary()


class RunFolderInUseError(OSError):
    """Another process holds the lock of the run folder; the message names the folder and
    that process (its id, host and start time)."""


class RunLock:
    """A run folder's lock, held until `release` (or until it is garbage-collected).

    Attributes:
        folder: the locked folder.
        path: the lock file, `folder/.lock`.
    """

    def __init__(self, folder: Path, descriptor: int | None) -> None:
        self.folder = folder
        self.path = folder / LOCK_FILE
        self._identity = None if descriptor is None else _identity(os.fstat(descriptor))
        self._finalizer = weakref.finalize(self, _unlock, descriptor, self.path, self._identity)

    @property
    def held(self) -> bool:
        """Whether this process holds the lock: until `release`, and while its file is the
        one at `path` (not removed with its folder); `False` if no lock could be taken."""
        return (
            self._identity is not None
            and self._finalizer.alive
            and _identity_at(self.path) == self._identity
        )

    def release(self) -> None:
        """Releases the lock and removes its file; does nothing the second time."""
        self._finalizer()


def lock_run_folder(folder: str | os.PathLike) -> RunLock:
    """Takes the exclusive lock of run folder `folder` (created, with its parents, if missing)
    for this process, before anything in it is written or removed.

    Args:
        folder: the run folder.

    Returns:
        The `RunLock`, held until released or garbage-collected (keep a reference for as
        long as the run writes the folder); the one this process holds already, if any.

    Raises:
        RunFolderInUseError: another process holds the lock; names the folder and that process.
        OSError: the folder cannot be created (e.g. `folder` is a file), or its lock file
            cannot be written.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"run folder {folder} is a file, not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    key = os.path.realpath(folder)
    held = _held.get(key)
    if held is not None and held.held:
        return held
    lock = RunLock(folder, _take(folder / LOCK_FILE) if fcntl is not None else None)
    _held[key] = lock
    return lock


def _take(path: Path) -> int | None:
    """An open descriptor of `path` holding its `flock`, the holder's details written in it;
    `None` if the filesystem cannot lock."""
    while True:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            raise RunFolderInUseError(
                f"run folder {path.parent} is in use by {_holder(path)}: one run per folder "
                "at a time; wait for it to end, or stop it"
            ) from None
        except OSError as error:
            os.close(descriptor)
            if error.errno not in (errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
                raise
            logger.warning("%s: the filesystem cannot lock files (%s); the run folder is "
                           "not protected against a second run", path, error.strerror)  # fmt: skip
            return None
        # The holder before us may have removed the file as it released it: then the lock
        # is on a file no one else will open, and the one at `path` (if any) is locked anew.
        if _identity_at(path) == _identity(os.fstat(descriptor)):
            _write_holder(descriptor)
            return descriptor
        os.close(descriptor)


def _write_holder(descriptor: int) -> None:
    """Writes this process's details into the lock file, replacing a dead holder's."""
    started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    text = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": started})
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, (text + "\n").encode("utf-8"), 0)


def _holder(path: Path) -> str:
    """Who holds the lock at `path`, as its file says: `process PID on host HOST (started
    TIME)`, or `another process` while the file does not say yet."""
    try:
        holder = json.loads(path.read_text(encoding="utf-8"))
        return f"process {holder['pid']} on host {holder['host']} (started {holder['started']})"
    except (OSError, ValueError, TypeError, KeyError):
        return "another process"


def _identity(status: os.stat_result) -> tuple[int, int]:
    return status.st_dev, status.st_ino


def _identity_at(path: Path) -> tuple[int, int] | None:
    try:
        return _identity(os.stat(path))
    except FileNotFoundError:
        return None


def _unlock(descriptor: int | None, path: Path, identity: tuple[int, int] | None) -> None:
    """Removes the lock file if it is still the one locked, then releases the lock (closing
    the descriptor): a process that opened the removed file finds it replaced and retries."""
    if descriptor is None:
        return
    if _identity_at(path) == identity:
        with contextlib.suppress(OSError):  # e.g. a read-only folder by now
            path.unlink()
    os.close(descriptor)
