#!/usr/bin/env python3
"""rgt-tui small-file sender: writes many small files to stdout, framed, on one channel.

Pulling thousands of small files one SFTP request at a time spends its time on round
trips and per-request work, not on bytes. The pull starts ``python3 -u -c BOOT``
(``sender_pool.SEND_COMMAND``: read N, then exec the next N bytes of stdin), or has the
manifest scan's listener fork one that does the same on a socket (``manifest.py
--share``), and sends this script with a last line that runs ``serve()``, which then
reads requests, a line each: a JSON list of ``[path, size]``. So it starts before the
pull knows which files it wants, and once started the process answers request after
request (the pull's ``SenderPool``); an empty line or the end of stdin ends it quietly. To each request it
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

The bytes go with ``os.sendfile`` (no copy through Python) into the channel: a pipe
(exec'd) enlarged to 1 MiB (a 64 KiB pipe wakes sshd and this process 16 times as
often), or the shared socket's connection. A file that shrinks
while it is sent ends the stream short, with exit status 3: the receiver reports it.

Rules: Python 3.6-compatible, standard library only. Paths are opened as UTF-8 bytes so
a box whose python3 runs under the C locale still finds non-ASCII names.
"""

import json
import os
import sys

START = b"RGT-SENDFILES 1\n"
FLUSH_AT = 1 << 20  # bytes gathered before one write: few system calls, little memory
PIPE_BYTES = 1 << 20  # Linux's default most for an unprivileged pipe
F_SETPIPE_SZ = 1031  # fcntl's constant (Python 3.10+ names it; boxes may run older ones)
SHRANK = 3  # exit status: the file shrank while it was sent


def serve():
    """Answer requests (one JSON line each on stdin) in turn, until an empty line or the
    end of stdin. A file that shrank while it was sent ends it (its reply is cut short)."""
    while True:
        line = sys.stdin.buffer.readline().strip()
        if not line:
            return 0
        request = json.loads(line.decode("utf-8"))
        if isinstance(request, dict):
            status = send_one(request["path"], int(request["offset"]), int(request["size"]))
        else:
            status = main(request)
        if status:
            return status


def send_one(path, offset, size):
    """Send ``path`` from ``offset`` up to ``size`` bytes, framed as one file."""
    out = sys.stdout.buffer
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


def main(request):
    """Write every requested file, in order, then DONE."""
    out = sys.stdout.buffer
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
