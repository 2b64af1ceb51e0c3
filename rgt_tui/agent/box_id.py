"""This box's id, kept in ``~/.rgt/box-id`` (``rgt_tui.domain.box_identity``).

Bundled into both on-box programs (the telemetry agent and the manifest scan): stdlib
only, Python 3.6 grammar. A box re-created under the same host name gets a new id, so
records of the old box never pass for the new one's.
"""

import os


def read_box_id(path=None):
    """(box id, None) from ``~/.rgt/box-id``, created once (random, 0600) when missing;
    (None, why) when it can be neither read nor made. Whichever on-box program runs
    first on a box writes the id; every later one reads it.
    """
    import binascii
    import errno

    path = os.path.expanduser(path or "~/.rgt/box-id")

    def read():
        with open(path, "rb") as f:
            return f.read(100).decode("utf-8", "replace").strip()

    try:
        try:
            return read(), None
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise
        os.makedirs(os.path.dirname(path), 0o700, exist_ok=True)
        # Written whole under a temporary name, then linked into place: link() fails when
        # the name exists, so of two agents starting at once only one id ever lands, and
        # no reader sees half of one.
        tmp = f"{path}.{os.getpid()}.{binascii.hexlify(os.urandom(4)).decode()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, (binascii.hexlify(os.urandom(16)).decode() + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except OSError as exc:
            if exc.errno != errno.EEXIST and not os.path.exists(path):
                os.rename(tmp, path)  # a file system without hard links
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return read(), None
    except OSError as exc:
        return None, f"cannot read or create {path}: {exc.strerror or exc}"
