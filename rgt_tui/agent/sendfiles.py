#!/usr/bin/env python3
"""rgt-tui small-file sender: writes many small files to stdout, framed, on one channel.

Pulling thousands of small files one SFTP request at a time spends its time on round
trips and per-request work, not on bytes. The pull starts ``python3 -u -c BOOT``
(``pull_batch.SEND_COMMAND``: read N, then exec the next N bytes of stdin) and sends this
script on stdin with a last line that runs ``serve()``, which then reads requests, a line
each: a JSON list of ``[path, size]``. So the box's shell and python3 start (tenths of
a second where a .bashrc sets up conda or pyenv) before the pull knows which files it
wants, and once started the process answers request after request (the pull's
``SenderPool``); an empty line or the end of stdin ends it quietly. To each request it
writes a start line, then for each file, in order::

    <index> <nbytes>\\n<nbytes raw bytes>          (the file)
    <index> E <JSON string: why it could not be read>\\n

and ``DONE`` at the end. The bytes go raw (not base64: a third fewer bytes to encrypt,
send and decrypt, and nothing to decode). The start line lets the receiver skip whatever
a login script printed before the script ran. The receiver checks each file against the
manifest's SHA-256, so a file that changed since is caught there, not here.

A request that is a JSON object, ``{"path": P, "offset": O, "size": S}``, sends one large
file from ``O`` (a resumed ``.part``), up to the manifest's size ``S``::

    0 <nbytes>\n<nbytes raw bytes>DONE\n
    0 E <errno> <JSON string: why it could not be read>\n

The bytes go with ``os.sendfile`` (no copy through Python) into a pipe enlarged to
1 MiB (a 64 KiB pipe wakes sshd and this process 16 times as often). A file that shrinks
while it is sent ends the stream short, with exit status 3: the receiver reports it.

**Shared (``serve_and_share``).** The first sender of a pull also listens on a Unix
socket (in a new folder only its user can enter) and prints ``RGT-SENDFILES-HUB <path>``
before anything else (``-`` when it cannot). The pull reaches that socket over the same
SSH connection (a ``direct-streamlocal`` channel: sshd connects it, no shell or python3
starts), and for each connection a forked copy of this process runs ``serve()`` on it.
Each exec'd sender costs the box's login shell and a python3 start (0.1 CPU-s and more
where a .bashrc sets up pyenv or conda); a forked one costs a millisecond. The listener
ends with the sender that started it (it watches a pipe only that sender holds open),
and removes its socket and folder.

Rules: Python 3.6-compatible, standard library only. Paths are opened as UTF-8 bytes so
a box whose python3 runs under the C locale still finds non-ASCII names.
"""

import json
import os
import sys

START = b"RGT-SENDFILES 1\n"
HUB = b"RGT-SENDFILES-HUB "  # + the shared socket's path (or -), then a newline
FOLDER_PREFIX = "rgt-send-"  # the shared socket's folder, in the temporary directory
SWEEP_AFTER_S = 60  # a folder left by a killed listener is removed once this old
FLUSH_AT = 1 << 20  # bytes gathered before one write: few system calls, little memory
PIPE_BYTES = 1 << 20  # Linux's default most for an unprivileged pipe
F_SETPIPE_SZ = 1031  # fcntl's constant (Python 3.10+ names it; boxes may run older ones)
SHRANK = 3  # exit status: the file shrank while it was sent


def serve(inp=None, out=None):
    """Answer requests (one JSON line each, read from ``inp``: stdin) in turn, writing to
    ``out`` (stdout), until an empty line or the end of input. A file that shrank while it
    was sent ends it (its reply is cut short)."""
    inp = inp or sys.stdin.buffer
    out = out or sys.stdout.buffer
    while True:
        line = inp.readline().strip()
        if not line:
            return 0
        request = json.loads(line.decode("utf-8"))
        if isinstance(request, dict):
            status = send_one(out, request["path"], int(request["offset"]), int(request["size"]))
        else:
            status = main(out, request)
        if status:
            return status


def serve_and_share():
    """``serve()`` on stdin and stdout, after starting a listener other senders of this
    pull connect to (each connection is served by a fork of this process)."""
    path = share()
    out = sys.stdout.buffer
    out.write(HUB + (path.encode("utf-8") if path else b"-") + b"\n")
    out.flush()
    return serve()


def share():
    """Fork a listener on a Unix socket in a new private folder; its path, or None where
    that cannot be done (the pull then starts its other senders as before)."""
    try:
        import select  # noqa: F401  (the listener needs these; find out before forking)
        import signal  # noqa: F401
        import socket
        import tempfile

        _sweep(tempfile.gettempdir(), socket)
        folder = tempfile.mkdtemp(prefix=FOLDER_PREFIX)  # mode 0700: this user only
    except (ImportError, OSError):
        return None
    path = os.path.join(folder, "s")
    try:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(16)
        alive, holder = os.pipe()  # this process holds ``holder``; the listener waits on EOF
        pid = os.fork()
    except (OSError, AttributeError):
        _remove(path, folder)
        return None
    if pid:
        os.close(alive)
        server.close()
        return path
    status = 0
    try:
        os.close(holder)
        # Not the channel's stdin/stdout/stderr: sshd closes the channel only when every
        # process holding them has exited, and the forks may outlive this sender.
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        # A session of its own: a hang-up of the sender's process group (its channel
        # closed) ends the sender, whose exit this sees, so it still removes its socket.
        os.setsid()
        _listen(server, alive)
    except BaseException:
        status = 1
    finally:
        _remove(path, folder)
        os._exit(status)


def _stop(signum, frame):
    raise SystemExit(0)  # through the finally that removes the socket


def _listen(server, alive):
    """Fork a ``serve()`` for each connection, until the sender that started this exits."""
    import select
    import signal

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forks are reaped by the kernel
    for signum in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, _stop)
    while True:
        ready = select.select([server, alive], [], [])[0]
        if alive in ready:
            return  # end of file: the sender exited, the pull is over
        try:
            conn = server.accept()[0]
        except OSError:
            continue
        if os.fork() == 0:
            status = 1
            try:
                for signum in (signal.SIGHUP, signal.SIGTERM):
                    signal.signal(signum, signal.SIG_DFL)
                server.close()
                os.close(alive)
                status = serve(conn.makefile("rb"), conn.makefile("wb"))
            finally:
                os._exit(status)
        conn.close()


def _sweep(tmp, socket):
    """Remove this user's shared-socket folders whose listener is gone (killed, so it
    could not remove its own): only a socket named ``s`` in an otherwise empty folder."""
    import stat
    import time

    try:
        names = os.listdir(tmp)
    except OSError:
        return
    for name in names:
        if not name.startswith(FOLDER_PREFIX):
            continue
        folder = os.path.join(tmp, name)
        path = os.path.join(folder, "s")
        try:
            info = os.lstat(folder)
            if info.st_uid != os.getuid() or time.time() - info.st_mtime < SWEEP_AFTER_S:
                continue  # another user's, or one that may still be starting up
            if os.listdir(folder) != ["s"]:
                continue
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                continue
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(path)
                continue  # a live listener: another pull's
            except OSError:
                pass  # nobody listens: left behind
            finally:
                probe.close()
        except OSError:
            continue
        _remove(path, folder)


def _remove(path, folder):
    for remove, name in ((os.unlink, path), (os.rmdir, folder)):
        try:
            remove(name)
        except OSError:
            pass


def send_one(out, path, offset, size):
    """Send ``path`` from ``offset`` up to ``size`` bytes, framed as one file."""
    out.write(START)
    try:
        fd = os.open(path.encode("utf-8"), os.O_RDONLY)
    except OSError as exc:
        reason = json.dumps(str(exc.strerror or exc))
        out.write(f"0 E {exc.errno or 0} {reason}\n".encode("ascii"))
        out.flush()
        return 0
    try:
        length = max(0, min(size, os.fstat(fd).st_size) - offset)
        out.write(b"0 %d\n" % length)
        out.flush()
        _enlarge_pipe(out.fileno())
        if _copy(fd, out.fileno(), offset, length) < length:
            return SHRANK
    finally:
        os.close(fd)
    out.write(b"DONE\n")
    out.flush()
    return 0


def _enlarge_pipe(fd):
    try:
        import fcntl

        fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, OSError):
        pass  # not a pipe, or a lower limit: the default size works, with more wake-ups


def _copy(src, dst, offset, length):
    """Copy ``length`` bytes of ``src`` from ``offset`` to ``dst``; returns the bytes copied."""
    done = 0
    while done < length:
        try:
            n = os.sendfile(dst, src, offset + done, length - done)
        except OSError:
            break  # sendfile refused (an old kernel, an odd file system): copy plainly
        if not n:
            return done
        done += n
    while done < length:
        data = os.pread(src, min(FLUSH_AT, length - done), offset + done)
        if not data:
            return done
        view = memoryview(data)
        while view:
            view = view[os.write(dst, view) :]
        done += len(data)
    return done


def main(out, request):
    """Write every requested file to ``out``, in order, then DONE."""
    out.write(START)
    pending = []
    pending_bytes = 0
    for index, item in enumerate(request):
        path, size = item[0], int(item[1])
        try:
            with open(path.encode("utf-8"), "rb") as f:
                data = f.read(size)
        except OSError as exc:
            reason = json.dumps(str(exc.strerror or exc))
            pending.append(f"{index} E {reason}\n".encode("ascii"))
        else:
            pending.append(b"%d %d\n" % (index, len(data)))
            pending.append(data)
            pending_bytes += len(data)
        if pending_bytes >= FLUSH_AT:
            out.write(b"".join(pending))
            pending, pending_bytes = [], 0
    pending.append(b"DONE\n")
    out.write(b"".join(pending))
    out.flush()
    return 0
