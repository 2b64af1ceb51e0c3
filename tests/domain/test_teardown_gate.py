"""The teardown gate: unit cases, and a property test that no event path unlocks it early.

The property test keeps its own oracle: it re-derives, from the raw event history alone,
whether every condition of the Iron Law holds, and checks the gate never says "unlocked"
when the oracle says a condition is missing.

Kept whole: the unit cases and the property test share the event builders and the oracle.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.gate import ATTEMPT, BOX, FILES, LOCAL, listing
from support.gate import happy_events as happy_path

from rgt_tui.domain.teardown_gate import (
    ArtifactChecked,
    BoxChanged,
    CellsRunning,
    ConfirmationTyped,
    FileFacts,
    FilePulled,
    GateState,
    LocalCopyChecked,
    ManifestTaken,
    MissingCellAcknowledged,
    RecordsInvalid,
    RescanFailed,
    Rescanned,
    RosterChecked,
    RunningAcknowledged,
    VerificationRead,
    apply,
    conditions,
    is_unlocked,
    missing_conditions,
)

HOST = "h1"


def replay(*events, box_id: str | None = BOX) -> GateState:
    state = GateState(HOST, box_id=box_id)
    for e in events:
        state = apply(state, e)
    return state


def keys(state: GateState) -> list[str]:
    return [c.key for c in missing_conditions(state)]


def evidence(state: GateState, key: str) -> str:
    return next(c.evidence for c in conditions(state) if c.key == key)


def test_happy_path_unlocks_only_at_the_typed_name_with_its_rescan():
    events = happy_path()
    assert is_unlocked(replay(*events))
    before_typing = [*events[:-3], LOCAL, Rescanned(listing(), 205.0, box_id=BOX)]  # a check
    assert keys(replay(*before_typing)) == ["confirmed"]
    wrong = [*events[:-3], ConfirmationTyped("h2", ATTEMPT), *events[-2:]]
    assert keys(replay(*wrong)) == ["confirmed"]


def test_a_rescan_taken_before_the_name_was_typed_never_counts():
    events = happy_path()
    # The matching re-scan came first (the box was reachable hours ago), then the name.
    state = replay(*events[:-3], events[-1], *events[-3:-1])
    assert keys(state) == ["rescan"]
    assert "no re-scan since the name was typed" in evidence(state, "rescan")


def test_a_rescan_for_anything_but_this_confirmation_drops_it():
    events = happy_path()
    for other in ("", "attempt-2"):
        state = replay(*events[:-1], Rescanned(listing(), at=211.0, attempt=other, box_id=BOX))
        assert keys(state) == ["confirmed"], other
    # Nor does a later check's re-scan keep a confirmation typed in an earlier attempt.
    assert keys(replay(*events, Rescanned(listing(), at=300.0, box_id=BOX))) == ["confirmed"]
    # A confirmation typed without a token (an old journal) is kept by no re-scan.
    untokened = [*events[:-3], ConfirmationTyped(HOST), LOCAL, Rescanned(listing(), 211.0, "", BOX)]
    assert keys(replay(*untokened)) == ["confirmed"]


def test_a_failed_rescan_leaves_no_match_behind():
    state = replay(*happy_path(), RescanFailed("connection refused"))
    assert keys(state) == ["rescan"]
    assert "connection refused" in evidence(state, "rescan")


def test_facts_of_no_identified_box_or_a_rescan_of_another_box_never_unlock():
    assert keys(replay(*happy_path(), box_id=None)) == ["box", "rescan", "confirmed"]
    other = replay(*happy_path(box_id="fedcba9876543210fedcba9876543210"))
    assert not is_unlocked(other) and "another box" in evidence(other, "rescan")


@pytest.mark.parametrize(
    "problem",
    [
        "cellA/ckpt.pt: unsafe — needs arbitrary code to load",
        "cellB/metrics.json: unverifiable — nested too deeply",
        "notes/run.log: refused — symlink leaves the pull root",
        "cellA/ckpt.pt.tmp: leftover — an unfinished write left on the box",
        ".rgt/parts/cellB/x.part: unfinished — left by an interrupted pull",
        "cellB/data.bin: not verified — the manifest has no hash for it",
        "box1: not-rechecked — could not re-scan the box",
        "queue file problems, roster may be incomplete: line 3",
    ],
)
def test_every_verify_problem_keeps_it_locked_and_is_named(problem):
    events = happy_path()
    at = events.index(VerificationRead(True, ()))
    for read in (VerificationRead(False, (problem,)), VerificationRead(True, (problem,))):
        events[at] = read
        state = replay(*events)
        assert keys(state) == ["verified"], read
        assert problem in evidence(state, "verified")


def test_no_verification_of_this_manifest_keeps_it_locked():
    events = [e for e in happy_path() if not isinstance(e, VerificationRead)]
    state = replay(*events)
    assert keys(state) == ["verified"] and "run verify" in evidence(state, "verified")
    # A new manifest drops the verification of the old one.
    again = replay(*happy_path()[:-3], ManifestTaken(FILES, 300.0, 101.0), *happy_path()[-3:])
    assert "verified" in keys(again)


def test_a_file_dated_after_the_scan_ended_is_named_not_taken_for_a_later_write():
    """A file dated in the box's own future (a clock stepped back, a copy that kept its
    time) kept the manifest line locked until that date, whatever was pulled (hour
    s20a #4); one written while the scan walked still locks it."""
    future = (("cellB/metrics.json", FileFacts(5, 4_000_000_000.0, "sha-b")),)
    files = (FILES[0], *future)
    taken = ManifestTaken(files, 200.0, 4_000_000_000.0, finished_at=210.0)
    events = [taken if isinstance(e, ManifestTaken) else e for e in happy_path()]
    events = [
        Rescanned(listing(files), e.at, e.attempt, e.box_id) if isinstance(e, Rescanned) else e
        for e in events
    ]
    state = replay(*events)
    assert is_unlocked(state), missing_conditions(state)
    said = evidence(state, "manifest")
    assert "cellB/metrics.json is dated" in said and "after the scan ended" in said
    during = (("cellB/metrics.json", FileFacts(5, 205.0, "sha-b")),)
    taken = ManifestTaken((FILES[0], *during), 200.0, 205.0, finished_at=210.0)
    state = replay(taken)
    assert "before the last write on the box" in evidence(state, "manifest")


def test_files_pulled_but_not_yet_verified_are_sent_to_verify_not_to_pull_again():
    """Right after a pull the gate has no verify record of it: 0/N hash-verified, and the
    fix is verify (the files may all be here), where it used to say to pull again."""
    from rgt_tui.domain.gate_fixes import fix

    taken = ManifestTaken(FILES, taken_at=200.0, last_write=101.0)
    fresh = replay(taken, VerificationRead(False, ("no verification of this pull",)))
    (pulled,) = [c for c in conditions(fresh) if c.key == "pulled"]
    assert pulled.evidence == "0/2 hash-verified (no verify of this pull yet)"
    assert fix(pulled, HOST, tui=False).startswith("run `rgt-tui verify h1`")
    assert fix(pulled, HOST, tui=True).startswith("Esc, then v to verify")
    for key in ("loaded", "verified"):  # nothing named yet: verify names (not "re-pull")
        (line,) = [c for c in conditions(fresh) if c.key == key]
        assert fix(line, HOST, tui=False) == "run `rgt-tui verify h1`", key
    # Verify ran and found a file not here: pull again, as before.
    partial = replay(taken, FilePulled("cellA/ckpt.pt", "sha-a"))
    (pulled,) = [c for c in conditions(partial) if c.key == "pulled"]
    assert pulled.evidence == "1/2 hash-verified"
    assert fix(pulled, HOST, tui=False) == "run `rgt-tui pull h1` (it resumes), then verify"


def test_a_file_written_afterwards_locks_it_again():
    state = replay(
        *happy_path(),
        Rescanned((*listing(), ("cellA/late.pt", 3, 300.0)), at=301.0, box_id=BOX),
    )
    assert not is_unlocked(state)
    assert "new: cellA/late.pt" in evidence(state, "manifest")


REFUSED = ("cellA/private", "cannot list folder: Permission denied")
LINK = ("cellA/latest.pt", "cellA/ckpt.pt")


@pytest.mark.parametrize(
    "extra, named",
    [
        ({"refused": (REFUSED,)}, "refused by the re-scan: cellA/private (cannot list folder"),
        ({"links": (LINK,)}, "new link: cellA/latest.pt -> cellA/ckpt.pt"),
        ({"links": (("cellA/latest.pt", "cellB/metrics.json"),)}, "new link: cellA/latest.pt"),
    ],
)
def test_a_rescan_refusing_or_linking_what_the_manifest_did_not_is_a_change(extra, named):
    events = happy_path()
    rescan = Rescanned(listing(), at=210.0, attempt=ATTEMPT, box_id=BOX, **extra)
    state = replay(*events[:-1], rescan)
    assert not is_unlocked(state) and "manifest" in keys(state)
    assert named in evidence(state, "manifest")
    # What the manifest itself refused or linked is no change (verify names those).
    manifest = ManifestTaken(FILES, 200.0, 101.0, refused=(REFUSED,), links=(LINK,))
    assert is_unlocked(
        replay(
            manifest, *events[1:-1], Rescanned(listing(), 210.0, ATTEMPT, BOX, (REFUSED,), (LINK,))
        )
    )


def test_a_secret_or_rgt_state_the_rescan_skips_by_rule_is_no_change_as_in_verify():
    """A .netrc written on the box after the pull: the re-scan skips it by the secret rule
    (the manifest never saw it). Verify shows that as skipped, so the gate must not lock
    on it; nor on rgt-tui's own state skipped the same way. Any other refusal still locks."""
    from rgt_tui.agent.secret_paths import OWN_STATE_RULE, SECRET_RULE

    events = happy_path()
    skipped = (
        ("home/u/.netrc", f"{SECRET_RULE} (.netrc)"),
        ("home/u/.rgt/queue.lock", f"{OWN_STATE_RULE} (.rgt/queue.lock)"),
    )
    rescan = Rescanned(listing(), at=210.0, attempt=ATTEMPT, box_id=BOX, refused=skipped)
    assert is_unlocked(replay(*events[:-1], rescan))
    also = Rescanned(listing(), 210.0, ATTEMPT, BOX, (*skipped, REFUSED))
    state = replay(*events[:-1], also)
    assert not is_unlocked(state)
    assert "refused by the re-scan: cellA/private" in evidence(state, "manifest")
    assert ".netrc" not in evidence(state, "manifest")


def test_the_same_link_name_pointing_elsewhere_is_a_change():
    manifest = ManifestTaken(FILES, 200.0, 101.0, links=(LINK,))
    elsewhere = (("cellA/latest.pt", "cellB/metrics.json"),)
    rescan = Rescanned(listing(), at=210.0, attempt=ATTEMPT, box_id=BOX, links=elsewhere)
    state = replay(manifest, *happy_path()[1:-1], rescan)
    assert not is_unlocked(state)
    assert "new link: cellA/latest.pt" in evidence(state, "manifest")


def test_the_boxs_text_reaches_the_checklist_escaped():
    payload = "\x1b]0;pwned\x07\x1b[2J\nfake line\x9b"
    failed = replay(*happy_path(), RescanFailed(f"the box did not say: {payload}"))
    changed = replay(
        *happy_path()[:-1],
        Rescanned((*listing(), (f"cellA/{payload}", 1, 1.0)), 210.0, ATTEMPT, BOX),
    )
    problems = replay(*happy_path()[:5], VerificationRead(False, (payload,)), *happy_path()[6:])
    for state, key in ((failed, "rescan"), (changed, "manifest"), (problems, "verified")):
        shown = evidence(state, key)
        assert not any(c in shown for c in "\x1b\x07\n\x9b"), (key, shown)
        assert "\\x1b]0;pwned\\x07\\x1b[2J\\nfake line\\x9b" in shown, (key, shown)


def test_printable_escapes_every_control_character_and_caps_the_length():
    from rgt_tui.domain.text import printable

    raw = "a\x1b]0;t\x07b\nc\r\td\x7fe\x9bf\u2028g\udcffh\x00"
    shown = printable(raw)
    assert shown == "a\\x1b]0;t\\x07b\\nc\\r\\td\\x7fe\\x9bf\\u2028g\\udcffh\\x00"
    assert printable(shown) == shown  # its own output is left as it is
    assert printable("é — ü ✓") == "é — ü ✓"  # text that is merely not ASCII is kept
    cut = printable("x" * 1000, 50)
    assert len(cut) == 50 and cut.endswith("…") and printable("x" * 1000, None) == "x" * 1000
    assert printable(ValueError("bad\nline")) == "bad\\nline"


def test_a_cell_started_or_the_records_gone_lock_it_again():
    state = replay(*happy_path(), CellsRunning(("cellC",)))
    assert not is_unlocked(state) and "cell started: cellC" in state.invalidated_by
    gone = replay(*happy_path(), RecordsInvalid("the pulled copy is of another box"))
    assert not is_unlocked(gone) and "another box" in evidence(gone, "manifest")
    assert gone.box_id == BOX  # the box stays known; only the facts on the records drop


def test_while_a_cell_runs_the_lines_on_the_manifest_point_at_the_cell_not_at_a_pull():
    """A cell started after the pull: no valid manifest, and a pull cannot make one while
    it runs. Manifest, pulled and loaded sent the user to "press p to pull again (it
    resumes)" beside "0/0 hash-verified", a loop (a user's hour); they name the cell's
    way out, as the rescan line does."""
    from rgt_tui.domain.gate_fixes import fix

    state = replay(*happy_path(), CellsRunning(("cellC",)))
    lines = {c.key: c for c in conditions(state)}
    assert lines["pulled"].evidence == "nothing counts without a valid manifest (above)"
    for key in ("manifest", "rescan", "pulled", "loaded"):
        for tui in (True, False):
            words = fix(lines[key], HOST, tui=tui)
            assert words.startswith("wait for the running cell to end"), (key, words)
            assert "it resumes" not in words, (key, words)
        # The cursor is in the name box: each key comes after an Esc (hour s19a #6).
        words = fix(lines[key], HOST, tui=True)
        assert (
            "kill it (Esc, Enter, 7 for the Queue tab, then X); then Esc, then p to pull" in words
        )
        assert f"or kill it (`rgt-tui queue kill {HOST}`); then" in fix(lines[key], HOST, tui=False)
    # With nothing running, a missing manifest is still a pull's to make; the lines on it
    # say so (they said "press v" right after a verify, "re-pull the files named" naming
    # none, "(it resumes)" with nothing to resume).
    idle = replay(*happy_path(), RecordsInvalid("the pulled copy is of another box"))
    lines = {c.key: c for c in conditions(idle)}
    assert fix(lines["manifest"], HOST, tui=True) == "Esc, then p to pull, then v to verify"
    for key in ("pulled", "loaded", "verified"):
        assert fix(lines[key], HOST, tui=True) == (
            "Esc, then p to pull, then v to verify (the manifest line first)"
        ), key
    # Right after a verify, the verified and roster lines pointed at verify, not at the
    # manifest line that is the cause (hour s19a #12).
    assert lines["verified"].evidence == "nothing to verify without a valid manifest (above)"
    assert lines["roster"].evidence == "nothing to reconcile without a valid manifest (above)"
    running = {c.key: c for c in conditions(state)}
    assert running["roster"].evidence.startswith("nothing to reconcile without a valid manifest")
    # Accepting it running settles the idle line alone (hour s19a #8): said, with the kill.
    idle_fix = fix(running["idle"], HOST, tui=False)
    assert "--ack-running cellC" in idle_fix and f"rgt-tui queue kill {HOST}" in idle_fix
    assert idle_fix.endswith(
        "that settles this line only: while a cell still writes files, no pull can match the "
        "box, so the manifest line waits for its end, or a kill"
    )
    # The caveat before the way (h491 #3: "to tear down with them running" read as it).
    assert "one that writes nothing more can be accepted running" in idle_fix
    assert fix(running["roster"], HOST, tui=False).startswith("wait for the running cell to end")


def test_corrupted_checkpoint_keeps_it_locked_and_names_the_file():
    events = happy_path()
    events[3] = ArtifactChecked(
        "cellA/ckpt.pt", loadable=True, ok=False, detail="truncated: unexpected EOF"
    )
    state = replay(*events)
    assert not is_unlocked(state)
    assert "cellA/ckpt.pt: truncated" in evidence(state, "loaded")


def test_wrong_hash_and_stale_manifest_and_missing_cell():
    events = happy_path()
    assert not is_unlocked(
        replay(*events[:2], FilePulled("cellB/metrics.json", "sha-x"), *events[3:])
    )
    stale = [ManifestTaken(FILES, taken_at=100.5, last_write=101.0), *events[1:]]
    assert keys(replay(*stale)) == ["manifest"]
    roster = [
        *events[:6],
        RosterChecked(("cellA", "cellB", "cellC"), ("cellA", "cellB")),
        *events[7:],
    ]
    assert keys(replay(*roster)) == ["roster"]
    acked = replay(*roster[:-3], MissingCellAcknowledged("cellC"), *roster[-3:])
    assert is_unlocked(acked)
    assert "missing: cellC (acknowledged)" in evidence(acked, "roster")


def test_an_empty_box_opens_only_with_every_cell_accepted_by_name():
    """Hour s34 TUI #1: a box where nothing ran (or whose cells all moved away first)
    could never be torn down: "an empty result set is never a success" sent the user back
    to pull again, forever, while it billed. An empty manifest now counts when verify left
    it to the roster and each of its cells is accepted, by name, as having none."""
    cells = ("cellA", "cellB")
    empty = [
        ManifestTaken((), taken_at=200.0, last_write=0.0),
        VerificationRead(True, (), cells, empty_left_to_roster=True),
        RosterChecked(expected=cells, present=()),
        CellsRunning(()),
    ]
    confirm = [
        ConfirmationTyped(HOST, ATTEMPT),
        LocalCopyChecked("/results/h1", 205.0, matched=0),
        Rescanned((), at=210.0, attempt=ATTEMPT, box_id=BOX),
    ]
    acks = [MissingCellAcknowledged(c) for c in cells]
    assert is_unlocked(replay(*empty, *acks, *confirm))
    one = replay(*empty, acks[0], *confirm)
    assert keys(one) == ["roster"] and "nothing to save" in evidence(one, "manifest")
    # Not left to the roster (no queue, or verify said so): empty is never a success.
    plain = [VerificationRead(True, ()), *empty[2:]]
    assert "manifest" in keys(replay(empty[0], *plain, *acks, *confirm))
    # Nor with no cell to accept, or a cell that has results after all.
    for roster in (RosterChecked((), ()), RosterChecked(cells, ("cellA",))):
        state = replay(*empty[:2], roster, empty[3], *acks, *confirm)
        assert not is_unlocked(state) and "manifest" in keys(state)


def test_running_cell_needs_acknowledgement():
    events = [CellsRunning(("cellB",)), *happy_path()[:-4], CellsRunning(("cellB",))]
    confirm = happy_path()[-3:]
    assert keys(replay(*events, *confirm)) == ["idle"]
    assert is_unlocked(replay(*events, RunningAcknowledged("cellB"), *confirm))


def test_a_running_acknowledgement_holds_for_its_run_only():
    """h551 #1: accepted once by name, a cell's later run (a retry, a relaunch) ran
    unseen under the old acceptance and was torn down running."""
    first = CellsRunning(("cellB",), (("cellB", "1/100/"),))
    events = [first, *happy_path()[:-4], first]
    confirm = happy_path()[-3:]
    acked = [*events, RunningAcknowledged("cellB", "1/100/")]
    assert is_unlocked(replay(*acked, *confirm))
    # The same cell running again, a later run: asked again. (Started before the manifest
    # taken at 200: one started after it voids the manifest too, h618 #2.)
    again = CellsRunning(("cellB",), (("cellB", "2/150/"),))
    state = replay(*acked, again, *confirm)
    assert keys(state) == ["idle"] and not is_unlocked(state)
    assert is_unlocked(replay(*acked, again, RunningAcknowledged("cellB", "2/150/"), *confirm))
    after = replay(*acked, CellsRunning(("cellB",), (("cellB", "2/300/"),)), *confirm)
    assert keys(after)[:2] == ["manifest", "rescan"] and "idle" in keys(after)


def test_empty_manifest_never_unlocks():
    state = replay(
        ManifestTaken((), taken_at=10.0, last_write=0.0),
        VerificationRead(True, ()),
        RosterChecked((), ()),
        ConfirmationTyped(HOST, ATTEMPT),
        Rescanned((), at=11.0, attempt=ATTEMPT, box_id=BOX),
    )
    assert not is_unlocked(state)


# --- property: no path to unlocked skips a condition ---------------------------------

PATHS = ("a.pt", "b.json", "c.bin")
CELLS = ("x", "y")
ATTEMPTS = ("", "t1", "t2")
OTHER_BOX = "fedcba9876543210fedcba9876543210"


def _facts():
    return st.builds(
        FileFacts,
        st.sampled_from([1, 2]),
        st.sampled_from([1.0, 2.0]),
        st.sampled_from(["s1", "s2"]),
    )


# Actions that refer to "the latest manifest" are resolved while building the history,
# so matching re-scans and correct hashes are common and unlocking is reachable.
ACTIONS = st.one_of(
    st.builds(
        lambda files, t, w: ManifestTaken(tuple(sorted(files.items())), taken_at=t, last_write=w),
        st.dictionaries(st.sampled_from(PATHS), _facts(), max_size=3),
        st.sampled_from([1.0, 5.0]),
        st.sampled_from([0.0, 3.0]),
    ),
    st.tuples(
        st.just("rescan_same"),
        st.sampled_from(ATTEMPTS),
        st.sampled_from([BOX, BOX, OTHER_BOX]),
        st.sampled_from([(), (), (("a.pt", "unreadable"),)]),  # refused
        st.sampled_from([(), (), (("l.pt", "a.pt"),)]),  # links
    ),
    st.builds(
        lambda files, attempt: Rescanned(
            tuple(sorted((p, s, m) for p, (s, m) in files.items())), 9.0, attempt, BOX
        ),
        st.dictionaries(
            st.sampled_from(PATHS),
            st.tuples(st.sampled_from([1, 2]), st.sampled_from([1.0, 2.0])),
            max_size=3,
        ),
        st.sampled_from(ATTEMPTS),
    ),
    st.builds(RescanFailed, st.just("unreachable")),
    st.tuples(
        st.just("local_same"),
        st.sampled_from([(), ("a.pt",)]),
        st.sampled_from([(), ("b.json: size",)]),
    ),
    st.tuples(st.just("pull_right"), st.sampled_from(PATHS)),
    st.builds(FilePulled, st.sampled_from(PATHS), st.sampled_from(["s1", "s2"])),
    st.builds(ArtifactChecked, st.sampled_from(PATHS), st.booleans(), st.booleans()),
    st.builds(
        VerificationRead,
        st.booleans(),
        st.sampled_from([(), ("a.pt: leftover",), ("x", "y")]),
        st.just(()),
        st.booleans(),  # empty_left_to_roster
    ),
    st.builds(
        RosterChecked,
        st.lists(st.sampled_from(CELLS), unique=True).map(tuple),
        st.lists(st.sampled_from(CELLS), unique=True).map(tuple),
    ),
    st.builds(MissingCellAcknowledged, st.sampled_from(CELLS)),
    st.builds(CellsRunning, st.lists(st.sampled_from(CELLS), unique=True).map(tuple)),
    # With each run's start (``run_key``: attempts/started_at/task), before, at and after
    # the manifests' taken_at (1.0, 5.0), or none known.
    st.builds(
        lambda names, starts: CellsRunning(
            names, tuple((n, f"1/{t}/") for n, t in zip(names, starts, strict=False))
        ),
        st.lists(st.sampled_from(CELLS), unique=True).map(tuple),
        st.lists(st.sampled_from(["", "0", "4", "5", "9"]), min_size=3, max_size=3),
    ),
    st.builds(RunningAcknowledged, st.sampled_from(CELLS)),
    st.builds(BoxChanged, st.just("file written")),
    st.builds(RecordsInvalid, st.just("records gone")),
    st.builds(ConfirmationTyped, st.sampled_from([HOST, "h2", ""]), st.sampled_from(ATTEMPTS)),
)


def _resolve(actions) -> list:
    events, manifest = [], None
    for a in actions:
        if isinstance(a, ManifestTaken):
            manifest = a
        if isinstance(a, tuple) and a[0] == "rescan_same":
            if manifest is None:
                continue
            a = Rescanned(tuple((p, f.size, f.mtime) for p, f in manifest.files), 9.0, *a[1:])
        elif isinstance(a, tuple) and a[0] == "local_same":
            files = len(manifest.files) if manifest else 0
            a = LocalCopyChecked("/r", 9.0, files - len(a[1]) - len(a[2]), a[1], a[2])
        elif isinstance(a, tuple) and a[0] == "pull_right":
            facts = dict(manifest.files).get(a[1]) if manifest else None
            if facts is None:
                continue
            a = FilePulled(a[1], facts.sha256)
        events.append(a)
    return events


def oracle_allows(events: list) -> bool:
    """Every Iron-Law condition, re-derived from the raw history with no shared code."""
    idx = [i for i, e in enumerate(events) if isinstance(e, ManifestTaken)]
    if not idx:
        return False
    m_at = idx[-1]
    m = events[m_at]
    files = dict(m.files)
    after = events[m_at + 1 :]
    # An empty manifest counts only when verify left it to the roster, whose cells are
    # all missing (none present): each must then be acknowledged, checked below.
    reads = [e for e in after if isinstance(e, VerificationRead)]
    rosters = [e for e in after if isinstance(e, RosterChecked)]
    empty_ok = (
        bool(reads) and reads[-1].empty_left_to_roster
        and bool(rosters) and bool(rosters[-1].expected) and not rosters[-1].present
    )  # fmt: skip
    if (not files and not empty_ok) or m.taken_at < m.last_write:
        return False
    running: tuple = ()
    began: dict = {}  # each running cell's start, whole box seconds ("" when not known)
    for i, e in enumerate(events):
        if i == m_at and any(began.get(c, "") and int(began[c]) > m.taken_at for c in running):
            return False  # taken while a cell ran that had started after it
        if isinstance(e, CellsRunning):
            began = {name: run.split("/")[1] for name, run in e.runs}
            for c in e.names if i > m_at else ():
                start = began.get(c, "")
                if (start and int(start) > m.taken_at) or (not start and c not in running):
                    return False  # a cell started after the manifest
            running = e.names
    listing_now = {p: (f.size, f.mtime) for p, f in files.items()}
    for e in after:
        if isinstance(e, (BoxChanged, RecordsInvalid)):
            return False
        relisted = isinstance(e, Rescanned) and e.box_id == BOX
        if relisted and {p: (s, t) for p, s, t in e.files} != listing_now:
            return False
        if relisted and not {p for p, _ in e.refused} <= {p for p, _ in m.refused}:
            return False  # the re-scan refused what the manifest did not
        if relisted and not set(e.links) <= set(m.links):
            return False
    # The typed name: the latest one, after the manifest, right and with a token...
    typed_at = [i for i, e in enumerate(after) if isinstance(e, ConfirmationTyped)]
    if not typed_at:
        return False
    typed = after[typed_at[-1]]
    if typed.text != HOST or not typed.attempt:
        return False
    # ...then re-scans of this box for that very confirmation only, the last one matching.
    since = [e for e in after[typed_at[-1] + 1 :] if isinstance(e, (Rescanned, RescanFailed))]
    if not since or not all(
        isinstance(e, Rescanned) and e.attempt == typed.attempt and e.box_id == BOX for e in since
    ):
        return False
    # ...and the local copy re-hashed after the name was typed: every file, unchanged.
    local = [e for e in after[typed_at[-1] + 1 :] if isinstance(e, LocalCopyChecked)]
    if not local or local[-1].missing or local[-1].changed or local[-1].matched != len(files):
        return False
    for path, facts in files.items():
        pulls = [e for e in after if isinstance(e, FilePulled) and e.path == path]
        if not pulls or pulls[-1].sha256 != facts.sha256:
            return False
        checks = [e for e in after if isinstance(e, ArtifactChecked) and e.path == path]
        if not checks or not checks[-1].ok:
            return False
    if not reads or not reads[-1].ok or reads[-1].problems:
        return False
    if not rosters:
        return False
    acked = {e.name for e in events if isinstance(e, MissingCellAcknowledged)}
    if any(c not in rosters[-1].present and c not in acked for c in rosters[-1].expected):
        return False
    acked_running = {(e.name, e.run) for e in events if isinstance(e, RunningAcknowledged)}
    runs = dict(next((e.runs for e in reversed(events) if isinstance(e, CellsRunning)), ()))
    return all((c, runs.get(c, "")) in acked_running for c in running)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ACTIONS, max_size=40))
def test_no_event_sequence_unlocks_without_every_condition(actions):
    events = _resolve(actions)
    state = GateState(HOST, box_id=BOX)
    for i, e in enumerate(events):
        state = apply(state, e)
        if is_unlocked(state):
            assert oracle_allows(events[: i + 1]), events[: i + 1]


def test_the_property_can_reach_unlocked():
    """Guard against a vacuous property: its generator does produce unlocking histories."""
    actions = [
        ManifestTaken((("a.pt", FileFacts(1, 1.0, "s1")),), taken_at=5.0, last_write=0.0),
        ("pull_right", "a.pt"),
        ArtifactChecked("a.pt", True, True),
        VerificationRead(True, ()),
        RosterChecked(("x",), ("x",)),
        ConfirmationTyped(HOST, "t1"),
        ("local_same", (), ()),
        ("rescan_same", "t1", BOX),
    ]
    events = _resolve(actions)
    assert is_unlocked(replay(*events)) and oracle_allows(events)
    # Each of these, one step later, must lock it again; the oracle agrees.
    for late in (
        ("rescan_same", "", BOX),
        ("rescan_same", "t2", BOX),
        ("rescan_same", "t1", BOX, (("a.pt", "unreadable"),)),
        ("rescan_same", "t1", BOX, (), (("l.pt", "a.pt"),)),
        RescanFailed("down"),
        ("local_same", ("a.pt",), ()),
        ConfirmationTyped(HOST, "t1"),
    ):
        locked = _resolve([*actions, late])
        assert not is_unlocked(replay(*locked)) and not oracle_allows(locked)


def test_every_condition_says_what_it_needs():
    """A condition added to the gate without its words (what it needs) would show as a
    bare key in the TUI and the CLI."""
    from rgt_tui.domain.gate_fixes import NEEDS

    keys = {c.key for c in conditions(GateState(HOST, box_id=BOX))}
    assert keys <= NEEDS.keys(), keys - NEEDS.keys()


def test_the_checklist_words_say_each_thing_once_in_local_time():
    """No epoch seconds, no "1 files", and no evidence that repeats its title."""
    import time

    state = replay(*happy_path())
    manifest = evidence(state, "manifest")
    shown = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state.taken_at))
    assert f"taken at {shown}" in manifest
    assert f"taken at {state.taken_at:.0f}" not in manifest
    one = replay(ManifestTaken(FILES[:1], taken_at=100.0, last_write=0.0))
    assert evidence(one, "manifest").startswith("1 file, taken at ")
    assert (
        evidence(state, "rescan")
        == "the box lists the same files, sizes and mtimes as the manifest (a listing: not re-hashed)"
    )
    assert evidence(state, "idle") == "the queue is idle"


def test_a_missing_cells_fix_offers_running_it_not_only_pulling_or_accepting() -> None:
    """Hour s18a #10: a cell appended and never run was "missing", its fix "--ack-missing
    … — or pull the results those cells left": no results exist, and the ack throws away
    work never done. The fix now offers the launch first."""
    from rgt_tui.domain.gate_fixes import fix
    from rgt_tui.domain.teardown_gate import Condition

    roster = Condition("roster", False, "2/3 cells have results; missing: extra", ("extra",))
    cli = fix(roster, "box2", tui=False)
    assert cli.startswith("a missing cell that never ran: `rgt-tui launch box2` to run it"), cli
    assert "`rgt-tui pull box2`" in cli and "`rgt-tui teardown box2 --ack-missing extra`" in cli
    tui = fix(roster, "box2", tui=True)
    assert "the Queue tab's L to launch it" in tui and "Missing: accept" in tui, tui
