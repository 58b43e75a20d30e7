"""`storage_error_line`: a full disk, a read-only folder or a broken device, as Python, h5py and
TensorFlow report them, in one line naming the file; anything else is not one."""

import errno

import pytest

from keras_attention.core.io_errors import storage_error_line


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (OSError(errno.ENOSPC, "No space left on device", "run/model.keras"),
         "run/model.keras: no space left on the device (errno 28, ENOSPC)"),
        (PermissionError(errno.EACCES, "Permission denied", "/data/run/config.json"),
         "/data/run/config.json: permission denied (errno 13, EACCES)"),
        # h5py: the errno and the file inside the message.
        (OSError("Unable to synchronously create file (file write failed: time = Fri Dec  4, "
                 "filename = '/r/backup/new.latest.weights.h5', file descriptor = 5, errno = 27, "
                 "error message = 'File too large')"),
         "/r/backup/new.latest.weights.h5: file too large for this file system or process "
         "(file size limit) (errno 27, EFBIG)"),
        # TensorFlow: a device name before the file, the operating system's words after it.
        (RuntimeError("{{function_node __wrapped__CreateSummaryFileWriter_device_/job:localhost/"
                      "replica:0/task:0/device:CPU:0}} /r/logs/train/events.out.tfevents.1.v2; "
                      "No space left on device"),
         "/r/logs/train/events.out.tfevents.1.v2: no space left on the device (errno 28, ENOSPC)"),
    ],
)  # fmt: skip
def test_a_storage_failure_is_one_line_naming_the_file(error, expected):
    assert storage_error_line(error) == expected


def test_the_cause_of_a_wrapping_error_is_read():
    try:
        try:
            raise OSError(errno.EROFS, "Read-only file system", "/ro/x.json")
        except OSError as cause:
            raise ValueError("could not save the run") from cause
    except ValueError as error:
        assert storage_error_line(error) == "/ro/x.json: read-only file system (errno 30, EROFS)"


@pytest.mark.parametrize(
    "error",
    [ValueError("bad value"), FileNotFoundError(errno.ENOENT, "No such file", "x"),
     OSError(errno.EEXIST, "File exists", "x"), KeyError("errno = 28")],
)  # fmt: skip
def test_other_errors_are_not_storage_failures(error):
    assert storage_error_line(error) is None
