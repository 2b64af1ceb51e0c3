"""Xid lines from the kernel ring buffer (U22): the parser (pure) and the reader."""

import errno
import os
import re

KMSG_MAX_READS = 100000  # bound one sample's kmsg drain; the ring holds far fewer records
XID_RE = re.compile(r"NVRM: Xid \(([^)]*)\): (\d+),")
KMSG_PREFIX_RE = re.compile(r"^\d+,\d+,\d+,[^;]*;")


def parse_xid_line(line):
    """{"xid": N, "text": message} for an NVIDIA Xid kernel line, else None.

    Accepts a raw /dev/kmsg record ("6,1234,5678,-;NVRM: Xid ...") or a dmesg line.
    """
    text = KMSG_PREFIX_RE.sub("", line.rstrip("\n"), count=1)
    match = XID_RE.search(text)
    if not match:
        return None
    return {"xid": int(match.group(2)), "text": text.strip()}


class KmsgReader:
    """Reads new records from <dev>/kmsg without blocking; silent where it is not readable.

    The first read starts at the oldest record still in the ring buffer, so Xids logged
    since boot (before the agent started) are reported once, on the first sample.
    """

    def __init__(self, dev_root):
        self.path = os.path.join(dev_root, "kmsg")
        self.fd = None
        self.disabled = False
        self.partial = b""

    def _open(self):
        try:
            self.fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            # Containers usually cannot read the kernel log: not an error, just no Xids.
            self.disabled = True

    @property
    def readable(self):
        """Whether the kernel log could be read (False in most containers: then a dead GPU
        shows only through nvidia-smi/NVML, U22); None before the first read."""
        if self.disabled:
            return False
        return None if self.fd is None else True

    def read_new(self):
        """Return the Xid events among records logged since the last call."""
        if self.disabled:
            return []
        if self.fd is None:
            self._open()
            if self.disabled:
                return []
        chunks = []
        for _ in range(KMSG_MAX_READS):
            try:
                chunk = os.read(self.fd, 8192)  # one record per read on /dev/kmsg
            except BlockingIOError:
                break  # EAGAIN: nothing more right now
            except OSError as exc:
                if exc.errno == errno.EPIPE:
                    continue  # records were overwritten before we read them; go on
                if exc.errno == errno.EAGAIN:
                    break
                self.disabled = True
                break
            if not chunk:
                break  # a regular file (tests, or a copied log) is at its end
            chunks.append(chunk)
        data = self.partial + b"".join(chunks)
        lines = data.split(b"\n")
        self.partial = lines.pop()  # a record cut mid-line finishes next time
        events = []
        for raw in lines:
            event = parse_xid_line(raw.decode("utf-8", "replace"))
            if event is not None:
                events.append(event)
        return events
