"""Panes out of view: they skip drawing, catch up when seen, and in a big fleet take a
new shape at the screen's tick without being repainted (issue 44: each repaint of a
widget Textual does not show has it lay out every pane again)."""

from __future__ import annotations

from pathlib import Path

from support.pilot import make_app, notes, screen_text, wait_for
from support.samples import FROZEN, agent_sample, disk, make_update, many_hosts_fleet, write_fleet

from rgt_tui.messages import HostUpdated
from rgt_tui.screens.fleet import _in_view
from rgt_tui.screens.host_detail import HostDetailScreen


async def test_hidden_panes_skip_drawing_and_catch_up(tmp_path: Path) -> None:
    app = make_app(tmp_path, fleet=many_hosts_fleet(tmp_path, 12))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        panes = app.fleet_screen.panes
        for i in range(12):
            app.post_message(HostUpdated(make_update(f"box{i}", agent_sample(f"box{i}"))))
        await pilot.pause()
        # The first sample changes every pane's shape (its height): all are drawn, even
        # out of view, so that the layout is right.
        assert all(p.draws >= 1 for p in panes.values())
        first = {name: p.draws for name, p in panes.items()}
        for i in range(12):
            app.post_message(HostUpdated(make_update(f"box{i}", agent_sample(f"box{i}", seq=2))))
        await pilot.pause()
        assert panes["box0"].draws == first["box0"] + 1  # on screen: drawn
        assert panes["box11"].draws == first["box11"] and panes["box11"].stale  # out of view
        app.fleet_screen.select("box11")  # scrolling it into view draws it
        await wait_for(lambda: panes["box11"].draws == first["box11"] + 1, pilot=pilot)
        # Behind the detail screen, nothing on the fleet screen is drawn.
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, HostDetailScreen)
        before = {name: p.draws for name, p in panes.items()}
        app.post_message(HostUpdated(make_update("box11", agent_sample("box11", seq=3))))
        await pilot.pause()
        assert {name: p.draws for name, p in panes.items()} == before
        assert "box11" in app.screen.host.name
        await pilot.press("escape")
        await wait_for(lambda: panes["box11"].draws == before["box11"] + 1, pilot=pilot)


async def test_a_big_fleets_pane_out_of_view_takes_a_new_shape_at_the_tick(
    tmp_path: Path,
) -> None:
    """Issue 44: in a big fleet a pane out of view whose height changes is drawn at the
    screen's once-a-second tick, not at each sample (every repaint out of view has
    Textual lay out all the panes again); one in view is drawn at once."""
    app = make_app(tmp_path, fleet=many_hosts_fleet(tmp_path, 20))
    async with app.run_test(size=(80, 40)) as pilot:
        await pilot.pause()
        panes = app.fleet_screen.panes
        assert panes["box19"].batched
        for i in range(20):
            app.post_message(HostUpdated(make_update(f"box{i}", agent_sample(f"box{i}"))))
        await wait_for(lambda: all(p.draws >= 1 for p in panes.values()), pilot=pilot)
        far, near = panes["box19"], panes["box0"]

        def far_text() -> str:  # what the screen shows of box19
            r = far.region
            rows = screen_text(app).splitlines()[r.y : r.bottom]
            return "\n".join(row[r.x : r.right] for row in rows)

        def seen_far() -> str:
            """box19 scrolled to (again on each look: under load the panes' heights were
            laid out after the first scroll, which then left it out of view), as shown."""
            far.scroll_visible(animate=False, immediate=True)
            return far_text()

        # box19 on screen once (Textual keeps its rows), then out of view again. Scrolled
        # to, not selected (selected, it would be repainted anyway for its border): a
        # CI run under load selected box18 and saw one row of box19 under it.
        await wait_for(lambda: "/workspace" in seen_far(), pilot=pilot, show=far_text)
        app.fleet_screen.select("box0")
        await wait_for(lambda: not far.can_draw(), pilot=pilot)
        assert near.can_draw()
        # A mount replaced by another: a new shape for each, of the same height. No await
        # between show() and the checks, so the screen's tick cannot run in between.
        moved = {"disks": [disk("/", "/", 40, 12), disk("/data", "/data", 55, 20)]}
        draws = far.draws
        assert not far.show(make_update("box19", agent_sample("box19", seq=2, **moved)))
        assert far.stale and far.reshaped and far.draws == draws
        assert near.show(make_update("box0", agent_sample("box0", seq=2, **moved)))
        await wait_for(lambda: far.draws == draws + 1, pilot=pilot)  # the tick drew it
        assert not far.reshaped and not far.can_draw()

        # Drawn out of view, it was not repainted (Textual would lay out every pane for
        # that): scrolled into view, it shows its new rows, not the old ones it had.
        # (Selected, it would be repainted anyway for its border.)
        await wait_for(
            lambda: "/data" in (t := seen_far()) and "/workspace" not in t,
            pilot=pilot,
            show=far_text,
        )


async def test_a_priced_pane_out_of_view_takes_its_new_cost_once_seen(tmp_path: Path) -> None:
    """A pane's cost subtitle is a Textual reactive: set out of view it is a repaint, which
    has Textual lay out every pane again. It waits until the pane can be seen."""
    text = "".join(
        f'[[hosts]]\nname = "box{i}"\nssh = "root@10.0.1.{i}"\ncost_per_hour = 3.6\n'
        "started_at = 2026-01-01T11:00:00Z\n\n"  # an hour before the frozen clock
        for i in range(20)
    )
    now = [FROZEN]
    app = make_app(tmp_path, fleet=write_fleet(tmp_path, text), clock=lambda: now[0])
    async with app.run_test(size=(80, 40)) as pilot:
        await pilot.pause()
        panes = app.fleet_screen.panes
        for i in range(20):
            app.post_message(HostUpdated(make_update(f"box{i}", agent_sample(f"box{i}"))))
        await wait_for(lambda: all(p.draws >= 1 for p in panes.values()), pilot=pilot)
        far = panes["box19"]

        def seen_far() -> str:
            """box19 scrolled to, again on each look (a loaded CI run selected its
            neighbour box18 and left box19 below the screen, the panes' heights laid
            out after the scroll), and its cost subtitle as shown. Scrolled to, not
            selected: selected, it would be repainted anyway for its border."""
            far.scroll_visible(animate=False, immediate=True)
            return str(far.border_subtitle)

        await wait_for(lambda: "$3.60 so far" in seen_far(), pilot=pilot)
        app.fleet_screen.select("box0")
        await wait_for(lambda: not far.can_draw(), pilot=pilot)
        now[0] += 3600  # an hour on: $3.60 more
        far.draw()  # out of view (as at the tick for a new shape)
        assert "$3.60 so far" in str(far.border_subtitle) and far.stale
        await wait_for(lambda: "$7.20 so far" in seen_far(), pilot=pilot)


async def test_the_selected_pane_stays_in_view_when_the_terminal_shrinks(tmp_path: Path) -> None:
    """A user's hour: box3 selected at 200x50, the terminal made 80x24, and box3 was off
    screen while p, t and L still acted on it."""
    app = make_app(tmp_path, fleet=many_hosts_fleet(tmp_path, 12))
    async with app.run_test(size=(200, 50)) as pilot:
        for i in range(12):
            app.post_message(HostUpdated(make_update(f"box{i}", agent_sample(f"box{i}"))))
        await pilot.pause()
        app.fleet_screen.select("box11")
        pane = app.fleet_screen.panes["box11"]
        grid = pane.parent

        def in_view() -> bool:
            return grid.region.contains_region(pane.region)  # type: ignore[union-attr]

        await wait_for(in_view, pilot=pilot)
        await pilot.resize_terminal(80, 24)
        await wait_for(in_view, pilot=pilot, what="box11 in view at 80x24")
        assert app.fleet_screen.selected is pane


async def test_panes_hold_their_drawing_under_a_dialog_and_catch_up_after(tmp_path: Path) -> None:
    """A pane redrawn under the help (a see-through modal) was written over the help's
    own box (a user's hour: chart blocks inside the help text): under any dialog the
    panes keep the sample and draw it once the fleet is on top again."""
    app = make_app(tmp_path, fleet=many_hosts_fleet(tmp_path, 2))
    async with app.run_test(size=(120, 40)) as pilot:
        for i in range(2):
            app.post_message(HostUpdated(make_update(f"box{i}", agent_sample(f"box{i}"))))
        pane = app.fleet_screen.panes["box0"]
        await wait_for(lambda: pane.draws >= 1, pilot=pilot)
        await pilot.press("question_mark")
        await wait_for(lambda: app.screen is not app.fleet_screen, pilot=pilot)
        before = pane.draws
        app.post_message(HostUpdated(make_update("box0", agent_sample("box0", seq=2))))
        await pilot.pause()
        await pilot.pause()
        assert pane.draws == before and pane.stale  # kept, not drawn under the help
        await pilot.press("escape")
        await wait_for(lambda: pane.draws == before + 1, pilot=pilot, what="drawn once back")


async def test_a_torn_down_pane_drops_its_last_alerts(tmp_path: Path) -> None:
    """A user's hour: the torn-down box3's pane still read '▲ GEN7 GPU 0 is shared by 3
    processes' (its last sample's alert): a torn-down box's alerts ask nothing now."""
    from dataclasses import replace

    from rgt_tui.domain.health import Alert

    app = make_app(tmp_path, fleet=many_hosts_fleet(tmp_path, 1))
    async with app.run_test(size=(120, 40)) as pilot:
        alert = Alert("shared", "warning", "GPU 0 is shared by 3 processes", "GEN7")
        update = replace(make_update("box0", agent_sample("box0")), alerts=(alert,))
        app.post_message(HostUpdated(update))
        await wait_for(lambda: "shared by 3 processes" in screen_text(app), pilot=pilot)
        app.fleet_screen.panes["box0"].mark_torn_down(FROZEN - 60)
        await wait_for(lambda: "torn down" in screen_text(app), pilot=pilot)
        assert "shared by 3 processes" not in screen_text(app)


async def test_bang_selects_the_next_pane_with_an_alert_critical_first(tmp_path: Path) -> None:
    """h513 #6: at 80x24 one pane shows, and the header counts alerts without naming the
    boxes: `!` selects the next pane with one, the critical ones first, then the warnings,
    scrolled into view."""
    from dataclasses import replace

    from rgt_tui.domain.health import Alert

    app = make_app(tmp_path, fleet=many_hosts_fleet(tmp_path, 12))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.fleet_screen
        await pilot.press("exclamation_mark")  # none yet: said, the selection stays
        await pilot.pause()
        assert screen.selected is not None and screen.selected.host.name == "box0"
        for i in range(12):
            update = make_update(f"box{i}", agent_sample(f"box{i}"))
            severity = {4: "warning", 7: "critical", 9: "critical"}.get(i)
            if severity:
                update = replace(update, alerts=(Alert("t.x", severity, "x", "P1"),))
            app.post_message(HostUpdated(update))
        await pilot.pause()
        picked = []
        for _ in range(4):
            await pilot.press("exclamation_mark")
            await pilot.pause()
            picked.append(screen.selected.host.name if screen.selected else None)
        assert picked == ["box7", "box9", "box4", "box7"]  # critical ones first, round again
        # A pane chosen by hand starts the walk again at the first critical one (h515 #6).
        screen.select("box4")
        await pilot.pause()
        await pilot.press("exclamation_mark")
        await pilot.pause()
        assert screen.selected is not None and screen.selected.host.name == "box7"
        await wait_for(lambda: _in_view(screen.panes["box7"]), pilot=pilot)  # scrolled to
        # A filter hiding them: said (h515 #6: "No pane shows an alert" beside the count).
        screen.apply_filter("box1")
        await pilot.pause()
        screen.action_next_alert()
        await pilot.pause()
        assert any("the filter hides 3 that do" in n for n in notes(app)), notes(app)


async def test_the_header_counts_boxes_billing_at_no_known_rate(tmp_path: Path) -> None:
    """h515 #1: the header's $/h left a box with no cost_per_hour out without a word;
    it now says how many bill at a rate not set. One set to 0 costs nothing."""
    text = (
        '[[hosts]]\nname = "a"\nssh = "root@10.0.1.1"\ncost_per_hour = 2.5\n\n'
        '[[hosts]]\nname = "b"\nssh = "root@10.0.1.2"\n\n'
        '[[hosts]]\nname = "c"\nssh = "root@10.0.1.3"\ncost_per_hour = 0\n'
    )
    app = make_app(tmp_path, fleet=write_fleet(tmp_path, text))
    async with app.run_test(size=(120, 30)) as pilot:
        for name in ("a", "b", "c"):
            app.post_message(HostUpdated(make_update(name, agent_sample(name))))
        await wait_for(lambda: "$2.50/h + 1 unpriced" in screen_text(app), pilot=pilot)
