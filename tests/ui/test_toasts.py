"""Toasts, whoever posts them (the App, a screen, a controller): plain text as written, every
one listed under ``n``, and one already on screen not stacked again; the queue's append
toasts over a real loopback box."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.pilot import SIZE, make_app, screen_text, shown_notifications, wait_for
from support.queues import SCRIPT_RUN
from textual.worker import Worker, WorkerState

from rgt_tui.controllers.notices import notices_of
from rgt_tui.screens.notices import NoticesScreen
from rgt_tui.services.queue.launch import launch, plan_launch

# What a queue file's parse error quotes (domain.queue_file.FORMAT_HINT), and what a box,
# a fleet file or an error could hold to forge a link, an action or break the toast.
FORMAT = "write <cfg_path> <task> [epochs]; quote a path that contains spaces"
FORGED = "[link=https://evil.example]x[/link] [@click=app.quit]y[/] [/] [bold]z"
FORGED_PARTS = ("[link=https://evil.example]x[/link]", "[@click=app.quit]y[/]", "[bold]z")


def shows_all(app: Any, parts: tuple[str, ...]) -> bool:
    text = screen_text(app)
    return all(p in text for p in parts)


async def test_toasts_show_brackets_as_written_and_are_all_listed(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        app.clear_notifications()
        app.notify(FORMAT, title="box1: append refused", severity="error")
        # Textual's Widget.notify asks for markup: a screen's toast comes the same way.
        app.screen.notify(FORGED, title="box2")
        await wait_for(
            lambda: shows_all(app, ("[epochs]", *FORGED_PARTS)), what="both toasts", pilot=pilot
        )
        assert app.is_running  # [@click=app.quit] is text, not an action

        # Every toast is in the notices list, as written.
        await pilot.press("n")
        await wait_for(lambda: isinstance(app.screen, NoticesScreen), pilot=pilot)
        assert [n.title for n in notices_of(app).items()][:2] == ["box2", "box1: append refused"]
        await wait_for(
            lambda: shows_all(app, ("Notices (", "[epochs]", *FORGED_PARTS)),
            what="the list",
            pilot=pilot,
        )


async def test_append_toasts_are_text_listed_and_never_stacked(
    make_queue_fleet: Any, tmp_path: Path
) -> None:
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t\n")
    host, transport = qf.host(), qf.transport()
    await launch(await plan_launch(qf.fleet, host, transport), transport)
    await transport.close()
    appends: list[WorkerState] = []  # each append's end, in order

    def hook(message: Any) -> None:
        if (
            isinstance(message, Worker.StateChanged)
            and message.worker.name == "queue-append:box1"
            and message.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED)
        ):
            appends.append(message.state)

    app = make_app(tmp_path, fleet=qf.fleet)
    async with app.run_test(size=SIZE, notifications=True, message_hook=hook) as pilot:
        await pilot.pause()
        app.clear_notifications()  # the danger clocks: not about this
        original = qf.queue_file().read_text()
        qf.append_queue(f"{qf.cell_script('two', 'echo two')} t 1 extra\n")  # 4 fields
        await pilot.press("a")
        await wait_for(lambda: len(appends) == 1, what="the refused append", pilot=pilot)
        refused = [n for n in shown_notifications(app) if n.title == "box1: append refused"]
        assert len(refused) == 1 and "[epochs]" in refused[0].message, refused
        await wait_for(lambda: "[epochs]" in screen_text(app), what="[epochs] shown", pilot=pilot)

        # Nothing new, asked six times: one toast saying so, never a pile of copies.
        qf.write_queue(original)
        for i in range(2, 8):
            await pilot.press("a")
            await wait_for(lambda i=i: len(appends) == i, what=f"append {i}", pilot=pilot)
            titles = [n.title for n in shown_notifications(app)]
            assert titles.count("box1: no new cells") <= 1, titles
            assert "box1: appended" not in titles, titles
            if i == 2:
                told = [n for n in shown_notifications(app) if n.title == "box1: no new cells"]
                assert [n.message for n in told] == ["nothing new in the queue file"]
        assert appends == [WorkerState.SUCCESS] * 7

        await pilot.press("n")
        await wait_for(lambda: isinstance(app.screen, NoticesScreen), pilot=pilot)
        titles = [n.title for n in notices_of(app).items()]
        assert titles[:2] == ["box1: no new cells", "box1: append refused"], titles
