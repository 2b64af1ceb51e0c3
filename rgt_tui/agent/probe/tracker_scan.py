"""The tracker check (U35): has the running cell's log printed its tracker's run line?

A run whose tracker could not start (no API key, a wrapper that turned offline mode into
"disabled") trains for hours with no curves; the sign is the absence of a line such as
``wandb: 🚀 View run …``. The log is the box's text, of any size and content, so it is
read in bounded steps: at most ``TRACKER_READ_PER_SAMPLE`` bytes a sample, from where the
last look stopped, only the first ``TRACKER_LINE_CAP`` bytes of each line matched, and no
more than ``TRACKER_SCAN_LIMIT`` bytes of one attempt's log in all.
"""

import os
import re
import stat

TRACKER_LINE_CAP = 4096  # bytes of one line matched: the run line is short
TRACKER_READ_PER_SAMPLE = 2 * 1024 * 1024
TRACKER_SCAN_LIMIT = 64 * 1024 * 1024  # a log this long without the line: it is not coming
_EOL = re.compile(b"[\r\n]")  # a tqdm bar's \r redraws count as line ends
_ANSI = re.compile("\x1b\\[[0-9;?]*[ -/]*[@-~]")  # colours around "wandb" in some setups


class TrackerScan:
    """Follows one cell attempt's log until a tracker pattern matches one of its lines."""

    def __init__(self, patterns, errors=None):
        self.patterns = []
        for pattern in patterns:
            try:
                self.patterns.append(re.compile(pattern))
            except re.error as exc:  # the box's python may be older than the one that checked it
                if errors is not None:
                    errors.append(f"tracker pattern {pattern!r}: {exc}")
        self.reset(None)

    def reset(self, key):
        """Start over for the attempt ``key`` (cell name, start time)."""
        self.key = key
        self.offset = 0
        self.line = b""
        self.seen = False

    def poll(self, key, path):
        """True: the attempt's log printed a run line; False: it was read to its end (or
        to the scan limit) without one; None: not known (no patterns, no log yet, or the
        log not read to its end yet)."""
        if not self.patterns:
            return None
        if key != self.key:
            self.reset(key)
        if self.seen:
            return True
        if self.offset >= TRACKER_SCAN_LIMIT:
            return False
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(path, flags)  # a FIFO planted there must not block the agent
        except FileNotFoundError:
            return None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise OSError(f"{path} is not a regular file")
            if st.st_size < self.offset:
                self.reset(key)  # truncated or replaced: read it afresh
            f.seek(self.offset)
            data = f.read(min(TRACKER_READ_PER_SAMPLE, TRACKER_SCAN_LIMIT - self.offset))
        self.offset += len(data)
        if self._feed(data):
            self.seen = True
            return True
        if self.offset >= TRACKER_SCAN_LIMIT or self.offset >= st.st_size:
            return False
        return None

    def _feed(self, data):
        """Match every line completed in ``data``, then the line still being written."""
        start = 0
        for m in _EOL.finditer(data):
            self._take(data[start : m.start()])
            if self._match():
                return True
            self.line = b""
            start = m.end()
        self._take(data[start:])
        return self._match()

    def _take(self, chunk):
        room = TRACKER_LINE_CAP - len(self.line)
        if room > 0 and chunk:
            self.line += chunk[:room]

    def _match(self):
        if not self.line:
            return False
        text = _ANSI.sub("", self.line.decode("utf-8", "replace"))
        return any(p.search(text) for p in self.patterns)
