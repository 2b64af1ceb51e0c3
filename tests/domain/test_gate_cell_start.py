"""A running cell voids the manifest by its start time against the manifest's taken_at
(h618 #2), not by being first seen running: the same manifest must not read invalid on
one check and valid on the next."""

from __future__ import annotations

from support.gate import BOX, happy_events

from rgt_tui.domain.teardown_gate import (
    CellsRunning,
    GateState,
    ManifestTaken,
    apply,
    conditions,
)

TAKEN = 200.0  # happy_events' manifest


def _replay(*events) -> GateState:
    state = GateState("h1", box_id=BOX)
    for event in events:
        state = apply(state, event)
    return state


def _manifest_line(state: GateState):
    return next(c for c in conditions(state) if c.key == "manifest")


def _running(start: int | None) -> CellsRunning:
    return CellsRunning(("cellG",), (("cellG", f"1/{'' if start is None else start}/"),))


def test_a_cell_running_since_before_the_manifest_leaves_it_valid() -> None:
    manifest = happy_events()[0]
    assert isinstance(manifest, ManifestTaken) and manifest.taken_at == TAKEN
    state = _replay(*happy_events()[:8], _running(150))
    assert state.manifest is not None and _manifest_line(state).ok
    # Read again at the next check (every check re-reads the pull): still the same.
    again = _replay(*happy_events()[:8], _running(150), manifest, _running(150))
    assert again.manifest is not None and _manifest_line(again).ok


def test_a_cell_started_after_the_manifest_voids_it_at_every_check() -> None:
    manifest = happy_events()[0]
    first = _replay(*happy_events()[:8], _running(250))
    assert first.manifest is None and first.invalidated_by == "cell started: cellG"
    # The next check reads the same pull again, the cell still running: it stays void
    # (it read valid then, and the roster offered to accept the running cell as missing).
    second = apply(first, manifest)
    assert second.manifest is None and second.invalidated_by == "cell started: cellG"
    assert apply(second, _running(250)) == second  # nothing new to record
    # A pull taken after it started is a manifest of what it wrote so far.
    later = ManifestTaken(manifest.files, taken_at=300.0, last_write=manifest.last_write)
    assert apply(second, later).manifest is not None


def test_a_start_in_the_second_the_scan_began_counts_as_before_it() -> None:
    """Starts are whole seconds: a pull right after a launch is taken in the second the
    cell started (the re-scan finds what it writes after the listing)."""
    taken = ManifestTaken(happy_events()[0].files, taken_at=200.4, last_write=101.0)
    assert _replay(taken, *happy_events()[1:8], _running(200)).manifest is not None
    assert _replay(taken, *happy_events()[1:8], _running(201)).manifest is None


def test_with_no_start_known_a_cell_first_seen_running_voids_it_as_before() -> None:
    state = _replay(*happy_events()[:8], _running(None))
    assert state.manifest is None and state.invalidated_by == "cell started: cellG"
    bare = _replay(*happy_events()[:8], CellsRunning(("cellG",)))
    assert bare.manifest is None


def test_run_started_reads_the_run_key() -> None:
    from rgt_tui.domain.teardown_gate import run_started

    assert run_started("3/1700000050/41_2") == 1700000050
    assert run_started("1//") is None and run_started("") is None
    assert run_started("1/-5/") is None and run_started("1/1e9/") is None
