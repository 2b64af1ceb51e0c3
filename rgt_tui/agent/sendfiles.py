#!/usr/bin/env python3
"""rgt-tui small-file sender: prints many small files on one channel, one line each.

Pulling thousands of small files one SFTP request at a time spends its time on round
trips and per-request work, not on bytes. The pull sends this script (``python3 -u -``,
source on stdin) with a final line that calls ``main(REQUEST)``, REQUEST being a JSON
list of ``[path, size]``. For each file it prints one line::

    <index> <offset> <base64 of up to 32 KiB from offset>     (as many as needed)
    <index> END <nbytes>                                       (after the last piece)
    <index> E <JSON string: why it could not be read>

and ``DONE`` at the end. Pieces keep every line under 64 KiB, the default line limit of
an asyncio stream reader. The receiver checks each file against the manifest's SHA-256,
so a file that changed since is caught there, not here.

Rules: Python 3.6-compatible, standard library only. Paths are opened as UTF-8 bytes so
a box whose python3 runs under the C locale still finds non-ASCII names.
"""

import base64
import json
import sys

PIECE = 32 * 1024


def main(request):
    """Print every requested file, in order, then DONE."""
    out = sys.stdout.buffer
    for index, item in enumerate(request):
        path, size = item[0], int(item[1])
        try:
            with open(path.encode("utf-8"), "rb") as f:
                data = f.read(size)
        except OSError as exc:
            reason = json.dumps(str(exc.strerror or exc))
            out.write(f"{index} E {reason}\n".encode("ascii"))
            continue
        lines = [
            b"%d %d " % (index, at) + base64.b64encode(data[at : at + PIECE]) + b"\n"
            for at in range(0, len(data), PIECE)
        ]
        lines.append(b"%d END %d\n" % (index, len(data)))
        out.write(b"".join(lines))  # one write per file: few syscalls
    out.write(b"DONE\n")
    out.flush()
    return 0
