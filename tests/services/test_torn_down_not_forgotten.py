"""A box recorded as torn down is never GEN1's "forgotten box … pull, verify and tear it
down" (s37 money hour #1: a watch running since before the teardown paged it as critical
and exported it for RgtForgottenBox, beside the still-answers alert whose fix is the
provider's console). The runtime, told by ``is_torn_down`` (the TUI's jobs, `watch`'s
journal) or handed the still-answers alert; the alerts come from the real health rules."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from support.samples import FROZEN, agent_sample, make_update

from rgt_tui.domain.cost import FORGOTTEN_ALERT, forgotten_box_alert
from rgt_tui.domain.torn_down import STILL_ANSWERS, still_answers_alert
from rgt_tui.services.connections import FleetConnections
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.services.runtime.runtime import FleetRuntime

FLEET = '[[hosts]]\nname = "box1"\nssh = "root@10.0.0.5:40022"\ncost_per_hour = 2.5\n'


def forgotten_update():  # type: ignore[no-untyped-def]
    update = make_update("box1", agent_sample("box1", t=FROZEN))
    gen1 = forgotten_box_alert(FROZEN - 3600, FROZEN, 2.5)
    assert gen1 is not None and gen1.id == FORGOTTEN_ALERT
    return dataclasses.replace(update, alerts=(gen1, *update.alerts))


def runtime(tmp_path: Path, **kwargs) -> FleetRuntime:  # type: ignore[no-untyped-def]
    (tmp_path / "hosts.toml").write_text(FLEET)
    fleet = load_fleet(tmp_path / "hosts.toml")
    return FleetRuntime(
        fleet, FleetConnections(fleet.hosts), monitors={}, start_added=False,
        clock=lambda: FROZEN, sample_allocations=False, **kwargs,
    )  # fmt: skip


def ids(rt: FleetRuntime) -> list[str]:
    return [a.id for a in rt.latest["box1"].alerts]


def test_a_box_that_answers_after_its_teardown_is_the_leak_not_forgotten(tmp_path: Path):
    leak = still_answers_alert(FROZEN - 3600, FROZEN)
    rt = runtime(tmp_path, still_answers=lambda host: leak)  # the box watch's alert
    rt.apply(forgotten_update())
    assert ids(rt)[0] == STILL_ANSWERS and FORGOTTEN_ALERT not in ids(rt)


def test_a_box_the_tui_knows_torn_down_is_not_forgotten(tmp_path: Path):
    rt = runtime(tmp_path, is_torn_down=lambda host: True)
    rt.apply(forgotten_update())
    assert FORGOTTEN_ALERT not in ids(rt)


def test_a_box_not_torn_down_is_still_told_forgotten(tmp_path: Path):
    rt = runtime(tmp_path)
    rt.apply(forgotten_update())
    assert FORGOTTEN_ALERT in ids(rt)


def test_the_alerts_tab_gives_the_leak_its_own_fix_not_gen1s() -> None:
    """The still-answers alert is GEN1's leak; the catalogue's fix for GEN1 ("pull, verify
    and tear it down") was already done: its tab said it under the alert (s37 money #1)."""
    from rgt_tui.screens.tabs.alerts import alert_block

    text = alert_block(still_answers_alert(FROZEN - 3600, FROZEN)).plain
    assert "destroy it in the provider's console" in text.split("fix:")[-1], text
    assert "pull, verify and tear it down as soon as its results load" not in text
    forgotten = forgotten_box_alert(FROZEN - 3600, FROZEN, 2.5)
    assert forgotten is not None
    assert "pull, verify and tear it down as soon as its results load" in (
        alert_block(forgotten).plain
    )  # GEN1's own
    # Its figure is what the box billed since the queue finished, said so: beside the
    # status line's "$3.48 so far" (since started_at), "$0.15 so far" read as a mistake.
    assert "($2.50 since it finished): pull, verify" in forgotten.message, forgotten.message


def test_a_box_autostop_just_stopped_is_not_forgotten_while_it_goes_down(tmp_path: Path):
    """s37 money hour #3: "stopped" at 16:06, then "forgotten … pull, verify and tear it
    down" (critical) at 16:07 while the box still answered within the providers' settle
    time. Past it, an answer is the stop's failure: GEN1 is told again."""
    from support.autostop import record_stop

    from rgt_tui.paths import journal_dir
    from rgt_tui.services.journal import Journal

    rt = runtime(tmp_path)
    folder = journal_dir(rt.fleet.path)
    record_stop(folder, "box1", FROZEN - 60)  # a minute ago, exit 0
    rt.apply(forgotten_update())
    assert FORGOTTEN_ALERT not in ids(rt)

    def seen(jh) -> bool:  # type: ignore[no-untyped-def]
        jh.last_seen = FROZEN + 400  # it answered past the settle time: not stopped
        return True

    Journal(folder).update("box1", seen)
    rt.apply(forgotten_update())
    assert FORGOTTEN_ALERT in ids(rt)
