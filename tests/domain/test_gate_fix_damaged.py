"""The loaded line's fix for a checkpoint damaged on the box itself (hour s23b #5): a pull
brings the same bytes, so the fix is a retry or removing the file there, not "re-pull"."""

from __future__ import annotations

from rgt_tui.domain.gate_fixes import fix
from rgt_tui.domain.teardown_gate import Condition

LOADED = Condition(
    "loaded",
    False,
    "s_seed7/ckpt_epoch2.pt: truncated or damaged on the box: it does not load as a checkpoint",
)


def test_the_command_line_names_the_retry_and_the_shell() -> None:
    said = fix(LOADED, "box4", tui=False)
    assert "`rgt-tui queue retry box4 CELL`: its folder is set aside and counts by its hash" in said
    # A retry starts it over: resuming from an earlier verified copy is a move (s35
    # resume hour #4: the retry was the only way offered, and the copy was never pushed).
    assert "a retry starts the cell over — to resume it from an earlier copy verify kept" in said
    assert "move it instead (`rgt-tui queue move CELL --to HOST`: its plan names the copy)" in said
    assert "`rgt-tui shell box4`" in said
    assert "then `rgt-tui pull box4` and `rgt-tui verify box4`; a retry" in said, said
    assert "re-pull" not in said


def test_the_tui_names_its_keys() -> None:
    said = fix(LOADED, "box4", tui=True)
    assert "Esc, Enter, 7 for the Queue tab, then R" in said and "s (a shell on the box)" in said


def test_a_manifest_refused_for_an_unsafe_name_says_to_rename_it_on_the_box() -> None:
    """Hour s24c #8: "Esc, then p to pull" for a file every pull refuses."""
    refused = Condition(
        "manifest",
        False,
        "refused by the re-scan: evil\\x1b[2J/big.bin (unsafe path from the box: control "
        "character in name ('\\x1b'))",
    )
    said = fix(refused, "box2", tui=True)
    assert said.startswith("rename on the box each file the re-scan refused"), said
    assert "then p to pull" in said
    plain = Condition("manifest", False, "new: lr30/late_eval.json")
    assert fix(plain, "box2", tui=True) == "Esc, then p to pull, then v to verify"
