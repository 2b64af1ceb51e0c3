"""The teardown gate: unit cases, and a property test that no event path unlocks it early.

The property test keeps its own oracle: it re-derives, from the raw event history alone,
whether every condition of the Iron Law holds, and checks the gate never says "unlocked"
when the oracle says a condition is missing.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests_support_gate import FILES
from tests_support_gate import happy_events as happy_path

from rgt_tui.domain.teardown_gate import (
    ArtifactChecked,
    BoxChanged,
    CellsRunning,
    ConfirmationTyped,
    FileFacts,
    FilePulled,
    GateState,
    ManifestTaken,
    MissingCellAcknowledged,
    Rescanned,
    RosterChecked,
    RunningAcknowledged,
    apply,
    conditions,
    is_unlocked,
    missing_conditions,
)

HOST = "h1"


def replay(*events) -> GateState:
    state = GateState(HOST)
    for e in events:
        state = apply(state, e)
    return state


def test_happy_path_unlocks_only_at_the_typed_name():
    events = happy_path()
    assert not is_unlocked(replay(*events[:-1]))
    assert [c.key for c in missing_conditions(replay(*events[:-1]))] == ["confirmed"]
    assert is_unlocked(replay(*events))
    assert not is_unlocked(replay(*events[:-1], ConfirmationTyped("h2")))


def test_a_file_written_afterwards_locks_it_again():
    state = replay(
        *happy_path(),
        Rescanned(
            (*((p, f.size, f.mtime) for p, f in FILES), ("cellA/late.pt", 3, 300.0)), at=301.0
        ),
    )
    assert not is_unlocked(state)
    (manifest,) = [c for c in conditions(state) if c.key == "manifest"]
    assert "new: cellA/late.pt" in manifest.evidence


def test_a_cell_started_locks_it_again():
    state = replay(*happy_path(), CellsRunning(("cellC",)))
    assert not is_unlocked(state) and "cell started: cellC" in state.invalidated_by


def test_corrupted_checkpoint_keeps_it_locked_and_names_the_file():
    events = happy_path()
    events[4] = ArtifactChecked(
        "cellA/ckpt.pt", loadable=True, ok=False, detail="truncated: unexpected EOF"
    )
    state = replay(*events)
    assert not is_unlocked(state)
    (loaded,) = [c for c in conditions(state) if c.key == "loaded"]
    assert "cellA/ckpt.pt: truncated" in loaded.evidence


def test_wrong_hash_and_stale_manifest_and_missing_cell():
    events = happy_path()
    assert not is_unlocked(
        replay(*events[:3], FilePulled("cellB/metrics.json", "sha-x"), *events[4:])
    )
    stale = [ManifestTaken(FILES, taken_at=100.5, last_write=101.0), *events[1:]]
    assert [c.key for c in missing_conditions(replay(*stale))] == ["manifest"]
    roster = [
        *events[:6],
        RosterChecked(("cellA", "cellB", "cellC"), ("cellA", "cellB")),
        *events[7:],
    ]
    assert [c.key for c in missing_conditions(replay(*roster))] == ["roster"]
    acked = replay(*roster[:-1], MissingCellAcknowledged("cellC"), ConfirmationTyped(HOST))
    assert is_unlocked(acked)
    assert "missing: cellC (acknowledged)" in next(
        c.evidence for c in conditions(acked) if c.key == "roster"
    )


def test_running_cell_needs_acknowledgement():
    events = [
        CellsRunning(("cellB",)),
        *happy_path()[:-2],
        CellsRunning(("cellB",)),
        ConfirmationTyped(HOST),
    ]
    assert [c.key for c in missing_conditions(replay(*events))] == ["idle"]
    assert is_unlocked(replay(*events[:-1], RunningAcknowledged("cellB"), ConfirmationTyped(HOST)))


def test_empty_manifest_never_unlocks():
    state = replay(
        ManifestTaken((), taken_at=10.0, last_write=0.0),
        Rescanned((), at=11.0),
        RosterChecked((), ()),
        ConfirmationTyped(HOST),
    )
    assert not is_unlocked(state)


# --- property: no path to unlocked skips a condition ---------------------------------

PATHS = ("a.pt", "b.json", "c.bin")
CELLS = ("x", "y")


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
    st.just("rescan_same"),
    st.builds(
        lambda files: Rescanned(tuple(sorted((p, s, m) for p, (s, m) in files.items())), at=9.0),
        st.dictionaries(
            st.sampled_from(PATHS),
            st.tuples(st.sampled_from([1, 2]), st.sampled_from([1.0, 2.0])),
            max_size=3,
        ),
    ),
    st.tuples(st.just("pull_right"), st.sampled_from(PATHS)),
    st.builds(FilePulled, st.sampled_from(PATHS), st.sampled_from(["s1", "s2"])),
    st.builds(ArtifactChecked, st.sampled_from(PATHS), st.booleans(), st.booleans()),
    st.builds(
        RosterChecked,
        st.lists(st.sampled_from(CELLS), unique=True).map(tuple),
        st.lists(st.sampled_from(CELLS), unique=True).map(tuple),
    ),
    st.builds(MissingCellAcknowledged, st.sampled_from(CELLS)),
    st.builds(CellsRunning, st.lists(st.sampled_from(CELLS), unique=True).map(tuple)),
    st.builds(RunningAcknowledged, st.sampled_from(CELLS)),
    st.builds(BoxChanged, st.just("file written")),
    st.builds(ConfirmationTyped, st.sampled_from([HOST, "h2", ""])),
)


def _resolve(actions) -> list:
    events, manifest = [], None
    for a in actions:
        if isinstance(a, ManifestTaken):
            manifest = a
        if a == "rescan_same":
            if manifest is None:
                continue
            a = Rescanned(tuple((p, f.size, f.mtime) for p, f in manifest.files), at=9.0)
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
    if not files or m.taken_at < m.last_write:
        return False
    after = events[m_at + 1 :]
    running: tuple = ()
    for i, e in enumerate(events):
        if isinstance(e, CellsRunning):
            if i > m_at and set(e.names) - set(running):
                return False  # a cell started after the manifest
            running = e.names
    listing = {p: (f.size, f.mtime) for p, f in files.items()}
    matched = False
    for e in after:
        if isinstance(e, BoxChanged):
            return False
        if isinstance(e, Rescanned):
            if {p: (s, t) for p, s, t in e.files} != listing:
                return False
            matched = True
    if not matched:
        return False
    for path, facts in files.items():
        pulls = [e for e in after if isinstance(e, FilePulled) and e.path == path]
        if not pulls or pulls[-1].sha256 != facts.sha256:
            return False
        checks = [e for e in after if isinstance(e, ArtifactChecked) and e.path == path]
        if not checks or not checks[-1].ok:
            return False
    rosters = [e for e in after if isinstance(e, RosterChecked)]
    if not rosters:
        return False
    acked = {e.name for e in events if isinstance(e, MissingCellAcknowledged)}
    if any(c not in rosters[-1].present and c not in acked for c in rosters[-1].expected):
        return False
    acked_running = {e.name for e in events if isinstance(e, RunningAcknowledged)}
    if any(c not in acked_running for c in running):
        return False
    typed = [e for e in after if isinstance(e, ConfirmationTyped)]
    return bool(typed) and typed[-1].text == HOST


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ACTIONS, max_size=40))
def test_no_event_sequence_unlocks_without_every_condition(actions):
    events = _resolve(actions)
    state = GateState(HOST)
    for i, e in enumerate(events):
        state = apply(state, e)
        if is_unlocked(state):
            assert oracle_allows(events[: i + 1]), events[: i + 1]


def test_the_property_can_reach_unlocked():
    """Guard against a vacuous property: its generator does produce unlocking histories."""
    actions = [
        ManifestTaken((("a.pt", FileFacts(1, 1.0, "s1")),), taken_at=5.0, last_write=0.0),
        "rescan_same",
        ("pull_right", "a.pt"),
        ArtifactChecked("a.pt", True, True),
        RosterChecked(("x",), ("x",)),
        ConfirmationTyped(HOST),
    ]
    events = _resolve(actions)
    assert is_unlocked(replay(*events)) and oracle_allows(events)
