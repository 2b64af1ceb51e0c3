"""An entry whose name holds control characters is listed, shown with them as escapes,
and not offered for deletion: typed as shown it could never match (a hostile hour typed
``dir_\\x1b[7mREV`` exactly as listed and was told it was not listed), and a folder really
named with those printable characters would read the same."""

from __future__ import annotations

from rgt_tui.services.disk.audit import DiskAudit, Reclaimable
from rgt_tui.services.disk.offer import UNTYPABLE, not_offered, offered


def _audit(*paths: str) -> DiskAudit:
    entries = tuple(
        Reclaimable(p, "checkpoint", "f", 1, i, 100, label=p.rsplit("/", 1)[-1])
        for i, p in enumerate(paths)
    )
    return DiskAudit("box1", "/root", "id", (), (), (), entries, ("/root/results",))


def test_a_name_with_control_characters_is_listed_but_not_offered() -> None:
    plain, hostile = "/root/results/a/ckpt_1.pt", "/root/results/dir_\x1b[7mREV/ckpt_1.pt"
    audit = _audit(plain, hostile)
    entries = {e.path: e for e in audit.entries()}
    assert not_offered(audit, entries[plain]) is None
    assert not_offered(audit, entries[hostile]) == UNTYPABLE
    assert [e.path for e in offered(audit)] == [plain]


def test_typing_such_a_name_as_shown_says_why_it_is_not_offered() -> None:
    """Typed exactly as listed (its escapes as text), it read "is not listed above" (a
    user's hour): it says it is listed and why it is not offered."""
    from rgt_tui.content.disk_text import not_listed

    audit = _audit("/root/results/a/ckpt_1.pt", "/root/results/dir_\x1b[7mREV/ckpt_1.pt")
    said = not_listed(audit, "/root/results/dir_\\x1b[7mREV/ckpt_1.pt")
    assert said == f"is listed, but not offered: {UNTYPABLE}", said


def test_the_offer_says_first_that_a_delete_under_a_pull_folder_shuts_the_gate() -> None:
    """Said before the delete (hour s25b #7 found it only after: the gate read "the box
    lists other files than the manifest"), and only when an offered entry is under a
    pull folder: deleting a Hugging Face model changes nothing the gate compares."""
    from rgt_tui.content.disk_text import offer_line

    shuts = "a delete under a pull folder shuts the teardown gate until the next pull and verify"
    assert shuts in offer_line(_audit("/root/results/a/ckpt_1.pt"))
    model = Reclaimable("/root/.cache/huggingface/hub/models--org--a", "hf-model", "d", 1, 9, 100)
    only_models = DiskAudit("box1", "/root", "id", (), (), (model,), (), ("/root/results",))
    said = offer_line(only_models)
    assert said.startswith("offered for deletion") and shuts not in said, said


def test_a_folder_typed_with_a_trailing_slash_is_that_folder() -> None:
    """A shell's completion adds the slash: the folder was "listed, but not offered: its
    name holds control characters" in the TUI and "not in the disk audit" on the command
    line (a user's hour, s42). It is the folder; a plain name is never called untypable."""
    from rgt_tui.content.disk_text import not_listed

    audit = _audit("/root/results/a", "/root/results/dir_\x1b[7mREV")
    found = audit.find("/root/results/a/")
    assert found is not None and found.path == "/root/results/a"
    assert audit.find("a/") is found  # its short name, slash and all
    assert audit.find("/root/results/b/") is None
    said = not_listed(audit, "/root/results/a//")
    assert "control characters" not in said and UNTYPABLE not in said, said
    # The escaped one still says why it is not offered, slash or not.
    said = not_listed(audit, "/root/results/dir_\\x1b[7mREV/")
    assert said == f"is listed, but not offered: {UNTYPABLE}", said


def test_a_name_with_a_byte_that_is_no_text_is_not_offered() -> None:
    """h503 #4: `results/..\xffweird` arrives as `..\ufffdweird`: offered, its pulled-copy
    check looked at a path that is not the box's ("0 files under it pulled") and asked
    for the typed confirmation; only the box's own check stopped the delete."""
    plain, odd = "/root/results/a", "/root/results/..\ufffdweird"
    audit = _audit(plain, odd)
    entries = {e.path: e for e in audit.entries()}
    assert not_offered(audit, entries[odd]) == UNTYPABLE
    assert [e.path for e in offered(audit)] == [plain]
