"""The group line's keys for a box's links (review h506 #2): a link's target is stored
relative to its pull root, and the box's own pull may hold the group's folder under a
root above it; the same link on the box must read the same from either listing."""

from __future__ import annotations

from rgt_tui.domain.manifest import Manifest, ManifestLink, PullRoot
from rgt_tui.services.teardown.held_here import _link_key


def test_a_link_reads_the_same_from_the_groups_root_and_from_a_root_above_it() -> None:
    group = Manifest(
        "pair",
        (PullRoot(0, "~/g", "/root/x/g", ""),),
        (),
        (ManifestLink(0, "latest.pt", "ckpt.pt"),),
    )
    own = Manifest(
        "box2",
        (PullRoot(0, "~/x", "/root/x", ""),),
        (),
        (ManifestLink(0, "g/latest.pt", "g/ckpt.pt"),),
    )
    assert _link_key(group, group.links[0]) == _link_key(own, own.links[0])
    assert _link_key(group, group.links[0]) == "/root/x/g/latest.pt -> /root/x/g/ckpt.pt"
    elsewhere = Manifest(
        "box2",
        (PullRoot(0, "~/x", "/root/x", ""),),
        (),
        (ManifestLink(0, "g/latest.pt", "old.pt"),),
    )
    assert _link_key(elsewhere, elsewhere.links[0]) != _link_key(group, group.links[0])
