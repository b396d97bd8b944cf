"""Writing watch's files into a run folder that other people may have filled (a copied or shared output folder):
never through a link planted there. A report is written whole to a new temporary file beside it (created
exclusively, links not followed) and renamed over the name, which replaces a link instead of writing through it."""
from __future__ import annotations

import os
import stat

_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_FRESH = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def write_atomic(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` (temporary file + rename); OSError as the write or the rename fails, with the
    temporary file removed. The name of the temporary file is random: nobody can plant a link at it in advance. A
    device or a pipe at ``path`` (``--output /dev/null``, ``/dev/stdout``, a FIFO) is written into, never replaced:
    a rename over it would put a plain file in its place (as root, in /dev)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        mode = 0
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        with os.fdopen(os.open(path, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)),
                       "wb") as f:
            f.write(data)
        return
    tmp = f"{path}.tmp{os.getpid()}.{os.urandom(4).hex()}"  # secrets.token_hex(4) is this; its import costs ~8 ms
    fd = os.open(tmp, _NEW, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def open_fresh(path: str):
    """A file for writing at ``path`` (truncated), refusing a link there (OSError ELOOP): the console log, which
    grows as the run prints, so it cannot be renamed into place."""
    return os.fdopen(os.open(path, _FRESH, 0o666), "wb", buffering=0)
