"""Reading a run's files on a shared machine (docs/faults.md, "Output directories"): only a regular file is read, and
only through its own name. A FIFO would block the reader until someone writes into it, a device such as /dev/zero
would never end, and a symbolic link would read another file as the run's. The file is opened without following a
link in its name and without blocking (O_NOFOLLOW | O_NONBLOCK), and what was opened is checked (fstat), so that a
file swapped between a check and the open cannot slip through."""
import io
import os
import stat

from .errors import CaseError


def open_regular(path):
    """The regular file `path` opened for reading in binary mode; CaseError naming the file and what it is otherwise
    (a link, a FIFO, a device, a socket, a directory)."""
    path = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if os.path.islink(path):
            raise CaseError(f"{path}: a symbolic link; fpdp reads a run's files only as regular files of their own "
                            f"name") from None
        raise CaseError(f"{path}: cannot be read ({e.strerror})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode) else
                    "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else
                    "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
            raise CaseError(f"{path}: {kind}; fpdp reads a run's files only as regular files")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_text(path, encoding="utf-8"):
    """The text of the regular file `path` (open_regular)."""
    with open_regular(path) as f:
        return f.read().decode(encoding)


def regular_bytes(path):
    """The contents of the regular file `path` as a BytesIO (for readers that take a file object)."""
    with open_regular(path) as f:
        return io.BytesIO(f.read())
