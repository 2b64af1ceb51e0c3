"""The words messages are built from: counts agree with their nouns, times are local."""

from __future__ import annotations

import time

from rgt_tui.domain.units import local_time, plural


def test_plural_agrees_with_the_count():
    assert plural(1, "file") == "1 file"
    assert plural(0, "file") == "0 files" and plural(3, "cell") == "3 cells"
    assert (
        plural(1, "entry", "entries") == "1 entry" and plural(2, "entry", "entries") == "2 entries"
    )


def test_local_time_is_human_not_epoch_seconds():
    at = 1795512237
    assert local_time(at) == time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))
    assert str(at) not in local_time(at)
