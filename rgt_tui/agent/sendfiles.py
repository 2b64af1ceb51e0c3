#!/usr/bin/env python3
"""rgt-tui small-file sender: writes many small files to stdout, framed, on one channel.

Pulling thousands of small files one SFTP request at a time spends its time on round
trips and per-request work, not on bytes. The pull starts ``python3 -u -c BOOT``
(``pull_batch.SEND_COMMAND``: read N, then exec the next N bytes of stdin) and sends this
script on stdin with a last line that runs ``serve()``, which reads one more line: the
request, a JSON list of ``[path, size]``. So the box's shell and python3 start (tenths of
a second where a .bashrc sets up conda or pyenv) before the pull knows which files it
wants; an empty request line ends it quietly. It writes a start line, then for each
file, in order::

    <index> <nbytes>\\n<nbytes raw bytes>          (the file)
    <index> E <JSON string: why it could not be read>\\n

and ``DONE`` at the end. The bytes go raw (not base64: a third fewer bytes to encrypt,
send and decrypt, and nothing to decode). The start line lets the receiver skip whatever
a login script printed before the script ran. The receiver checks each file against the
manifest's SHA-256, so a file that changed since is caught there, not here.

Rules: Python 3.6-compatible, standard library only. Paths are opened as UTF-8 bytes so
a box whose python3 runs under the C locale still finds non-ASCII names.
"""

import json
import sys

START = b"RGT-SENDFILES 1\n"
FLUSH_AT = 1 << 20  # bytes gathered before one write: few system calls, little memory


def serve():
    """Read the request (one JSON line on stdin) and send it; nothing on an empty line."""
    line = sys.stdin.buffer.readline().strip()
    if not line:
        return 0
    return main(json.loads(line.decode("utf-8")))


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
