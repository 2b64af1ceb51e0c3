"""Which machine answers under a host's name: its id and its host key.

A host name in ``hosts.toml`` is only a label; rented boxes are destroyed and re-created
under the same name. Every fact rgt-tui records (the journal, the manifest kept with the
results, the verification) therefore belongs to a *box*, identified by:

- ``box_id``: a random id the box itself keeps in ``~/.rgt/box-id``, written once (0600)
  by whichever on-box program runs there first: the telemetry probe or the manifest scan;
- ``host_key``: the SHA-256 fingerprint of the host key the connection saw (None where
  the transport has none, e.g. this machine, or it was not known when recorded).

Two identities are the same box when their ids are equal and their host keys do not
contradict each other (a key not known on one side is no contradiction: a record made
before keys were recorded). A different id, or two known keys that differ, is a new box:
nothing recorded for the old one counts for it.

Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

BOX_ID_FILE = "~/.rgt/box-id"
# What a box id may look like: the agents write 32 hex digits; a user who wrote their own
# id by hand gets some latitude, but nothing that could garble a message or a file name.
_BOX_ID_RE = re.compile(r"[0-9A-Za-z._-]{8,64}")  # the whole value (fullmatch): no newline


@dataclass(frozen=True)
class BoxIdentity:
    """One box: the id it keeps in ``~/.rgt/box-id`` and the host key it presented."""

    box_id: str
    host_key: str | None = None

    def same_box(self, other: BoxIdentity | None) -> bool:
        """Whether ``other`` is this box (see the module docstring); None is never it."""
        if other is None or other.box_id != self.box_id:
            return False
        return self.host_key is None or other.host_key is None or self.host_key == other.host_key

    def short(self) -> str:
        """A few characters of the id, for messages."""
        return self.box_id[:12]

    def describe(self) -> str:
        """The id and the host key as one line, for the checklist."""
        key = self.host_key or "host key not recorded"
        return f"box {self.short()} ({key})"


def valid_box_id(value: Any) -> str | None:
    """``value`` when it is a well-formed box id, else None (a box's output is untrusted)."""
    if isinstance(value, str) and _BOX_ID_RE.fullmatch(value):
        return value
    return None


def identity_to_json(identity: BoxIdentity | None) -> dict[str, Any] | None:
    """The JSON form kept in the journal."""
    if identity is None:
        return None
    return {"box_id": identity.box_id, "host_key": identity.host_key}


def identity_from_json(data: Any) -> BoxIdentity | None:
    """The inverse of ``identity_to_json``; ValueError for anything it did not write."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ValueError(f"box identity is not an object: {data!r}")
    box_id = valid_box_id(data.get("box_id"))
    key = data.get("host_key")
    if box_id is None or not (key is None or isinstance(key, str)):
        raise ValueError(f"malformed box identity: {data!r}")
    return BoxIdentity(box_id, key)
