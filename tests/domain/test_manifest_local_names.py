"""Which names from the box this machine can write (ux-i 3): pure, with given limits."""

from __future__ import annotations

from rgt_tui.domain.manifest import Manifest, ManifestEntry, ManifestLink, PullRoot
from rgt_tui.domain.manifest_names import local_name_reason, refuse_unwritable
from rgt_tui.domain.manifest_refusals import refusal_fix, unpulled


def test_a_component_over_name_max_and_a_path_over_the_room_are_refused():
    assert local_name_reason("a/" + "b" * 255, 255, 4000) is None
    too_long = local_name_reason("a/" + "é" * 128, 255, 4000)  # 256 bytes, 128 characters
    assert too_long is not None and "256 bytes" in too_long and "allows 255" in too_long
    deep = "/".join(["d" * 200] * 21)  # every name fits; the whole path does not
    assert "4000 there" in (local_name_reason(deep, 255, 4000) or "")
    assert "shorter name" in refusal_fix(too_long)


def test_refuse_unwritable_moves_entries_and_links_to_refusals():
    roots = (PullRoot(0, "/r", "/r", ""),)
    manifest = Manifest(
        "box1",
        roots,
        entries=(
            ManifestEntry(0, "ok.bin", 1, 1.0, "0" * 64),
            ManifestEntry(0, "x" * 300, 1, 1.0, "0" * 64),
        ),
        links=(ManifestLink(0, "y" * 300, "ok.bin"), ManifestLink(0, "ok-link", "ok.bin")),
    )
    out = refuse_unwritable(manifest, 255, 4000)
    assert [e.path for e in out.entries] == ["ok.bin"]
    assert [ln.path for ln in out.links] == ["ok-link"]
    assert {r.path for r in unpulled(out)} == {"x" * 300, "y" * 300}
    same = Manifest("box1", roots, entries=(manifest.entries[0],))
    assert refuse_unwritable(same, 255, 4000) is same


def test_a_file_gone_since_the_listing_is_said_deleted_not_unreadable() -> None:
    # The scan's words (agent/manifest.py: "cannot read: " + strerror) for a file that was
    # listed, then deleted before it was hashed (ux-j 5).
    gone = refusal_fix("cannot read: No such file or directory")
    assert gone.startswith("it was deleted on the box while the pull listed it")
    assert "permissions" not in gone
    assert "permissions" in refusal_fix("cannot read: Permission denied")
