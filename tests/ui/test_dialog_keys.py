"""Every dialog says in words what Enter does, and its focused button shows in plain
text (``▶ Cancel ◀``), since colour is lost in a capture (issue 27). The safe default
stays the default: Enter on the trust prompt cancels, ``t`` trusts a box's own key, and
a jump host's key still takes its name typed."""

from __future__ import annotations

import socket
from pathlib import Path

from support.pilot import SIZE, make_app, publish_jobs, screen_text, wait_for
from test_app_queue import planned, queue_app
from textual.widgets import Input

from rgt_tui.demo.loopback import LOOPBACK_HOST
from rgt_tui.domain.errors import HostKeyError
from rgt_tui.screens.add_host import AddHostScreen
from rgt_tui.screens.diagnosis import DiagnosisScreen
from rgt_tui.screens.fleet import FleetScreen
from rgt_tui.screens.host_key import HostKeyScreen
from rgt_tui.screens.quit_confirm import QuitConfirmScreen
from rgt_tui.services.fleet.file import load_fleet

LINE = "[127.0.0.1]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMDi1ZsJqG3s8o0tWmhzLxqYw6pE9pLzJ1d1Jx0Vn9Rk"


def unknown_key(known_hosts: Path, jump: str | None = None) -> HostKeyError:
    return HostKeyError(
        "box1",
        "unknown host key",
        "compare the fingerprint, then trust it",
        presented="ssh-ed25519 SHA256:abcdefghijklmnop",
        trust_line=LINE,
        known_hosts_file=known_hosts,
        jump_host=jump,
    )


def has_line(text: str, *parts: str) -> bool:
    """Whether one row of the screen holds every part (the hint is one line)."""
    return any(all(p in row for p in parts) for row in text.splitlines())


async def test_trust_prompt_enter_cancels_says_so_and_t_trusts(tmp_path: Path) -> None:
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        app.host_keys.refused("box1", unknown_key(known_hosts))
        app.host_keys.review("box1")
        await wait_for(lambda: isinstance(app.screen, HostKeyScreen), pilot=pilot)
        await wait_for(lambda: "▶ Cancel ◀" in screen_text(app), pilot=pilot)
        text = screen_text(app)  # plain text: no colour to tell the focus by
        assert "▶ Trust" not in text
        assert has_line(text, "Enter: cancel", "t: trust this key", "Esc: cancel"), text

        # Moving the focus moves the marker and what the line says Enter does.
        await pilot.press("shift+tab")
        await wait_for(lambda: "▶ Trust this key ◀" in screen_text(app), pilot=pilot)
        assert has_line(screen_text(app), "Enter: trust this key")
        assert "▶ Cancel ◀" not in screen_text(app)
        await pilot.press("tab")
        await wait_for(lambda: "▶ Cancel ◀" in screen_text(app), pilot=pilot)

        await pilot.press("enter")  # the safe default: nothing written
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
        assert known_hosts.read_text() == ""

        app.host_keys.review("box1")
        await wait_for(lambda: isinstance(app.screen, HostKeyScreen), pilot=pilot)
        await pilot.press("t")
        await wait_for(lambda: known_hosts.read_text() == LINE + "\n", pilot=pilot)
        assert not isinstance(app.screen, HostKeyScreen)


async def test_jump_host_key_still_takes_its_name_typed(tmp_path: Path) -> None:
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        app.host_keys.refused("box1", unknown_key(known_hosts, jump="tunnel"))
        app.host_keys.review("box1")
        screen = await wait_for(
            lambda: isinstance(app.screen, HostKeyScreen) and app.screen, pilot=pilot
        )
        await wait_for(lambda: "type tunnel to trust" in screen_text(app), pilot=pilot)
        assert "Enter:" not in screen_text(app)  # Enter trusts nothing until it is typed
        # Away from the name box, t only brings the cursor back there.
        await pilot.press("tab")
        await pilot.press("t")
        name = screen.query_one("#key-name", Input)
        await wait_for(lambda: name.has_focus, pilot=pilot)
        assert isinstance(app.screen, HostKeyScreen) and known_hosts.read_text() == ""
        await pilot.press(*"tunnel")
        await wait_for(
            lambda: has_line(screen_text(app), "Enter: trust the jump host's key"), pilot=pilot
        )
        await pilot.press("enter")
        await wait_for(lambda: known_hosts.read_text() == LINE + "\n", pilot=pilot)


async def test_quit_question_marks_keep_running_and_says_what_enter_does(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        publish_jobs(app, "box1", running="pull")
        await pilot.press("q")
        await wait_for(lambda: isinstance(app.screen, QuitConfirmScreen), pilot=pilot)
        await wait_for(lambda: "▶ Keep running ◀" in screen_text(app), pilot=pilot)
        assert has_line(screen_text(app), "Enter: keep running", "q: quit anyway")
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
        assert app.is_running


async def test_add_screen_keys_by_keyboard_alone_and_no_bare_fix_heading(
    make_loopback_fleet, home, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    watched = await make_loopback_fleet(1)
    other = await make_loopback_fleet(1)
    box = other.boxes[0]
    before = watched.hosts_file.read_text()
    app = make_app(tmp_path, fleet=load_fleet(watched.hosts_file))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("plus")
        screen = await wait_for(
            lambda: isinstance(app.screen, AddHostScreen) and app.screen, pilot=pilot
        )
        assert has_line(screen_text(app), "Enter: check the host key", "Esc: cancel")

        # A box that does not answer: its reason, and no "fix" heading with nothing by it.
        # The port stays bound (never listening) until checked: no test beside this one
        # can start a server on it meanwhile.
        with socket.socket() as s:
            s.bind((LOOPBACK_HOST, 0))
            closed = s.getsockname()[1]
            target = screen.query_one("#add-target", Input)
            target.value = f"ssh -p {closed} root@{LOOPBACK_HOST}"
            await pilot.press("enter")
            await wait_for(lambda: "not checked" in screen_text(app), 30, pilot=pilot)
        rows = [r.strip(" │┃▎▊") for r in screen_text(app).splitlines()]
        assert "fix" not in rows, screen_text(app)

        # An unknown key: Cancel is focused and marked; no letter trusts (s43: a name typed
        # with Cancel focused trusted the key with its first letter); the Trust button,
        # one Shift+Tab away (Add is disabled), does; then the name field (h604 #7), and
        # Enter on Add adds.
        target.value = f"ssh -p {box.port} -i {other.client_key} {other.username}@{LOOPBACK_HOST}"
        screen.query_one("#add-name", Input).value = "added"
        screen.set_focus(target)
        await pilot.press("enter")
        await wait_for(lambda: "▶ Cancel ◀" in screen_text(app), 30, pilot=pilot)
        assert has_line(screen_text(app), "Enter: cancel", "Tab: next")
        assert "t: trust" not in screen_text(app)
        await pilot.press("t", "e")
        await pilot.pause()
        assert screen.check is not None and screen.check.status == "unknown"  # not trusted
        await pilot.press("shift+tab")  # Add is disabled until the key is trusted
        await wait_for(lambda: "▶ Trust this key ◀" in screen_text(app), pilot=pilot)
        assert has_line(screen_text(app), "Enter: trust this key")
        await pilot.press("enter")
        name = screen.query_one("#add-name", Input)
        await wait_for(lambda: name.has_focus, 30, pilot=pilot)
        screen.set_focus(screen.query_one("#add-add"))
        await wait_for(lambda: "▶ Add ◀" in screen_text(app), 30, pilot=pilot)
        assert has_line(screen_text(app), "Enter: add the box")
        await pilot.press("enter")
        await wait_for(lambda: "added" in app.fleet_screen.panes, pilot=pilot)
        assert load_fleet(watched.hosts_file).host("added").ssh.port == box.port

        # The same box again, its entry gone from the file and its key now known: Enter
        # after the paste checks it and goes on to the name, never to Add — a second
        # Enter added the box with a name, run template and folders never seen (s43).
        watched.hosts_file.write_text(before)
        await pilot.press("plus")
        again = await wait_for(
            lambda: (
                isinstance(app.screen, AddHostScreen) and app.screen is not screen and app.screen
            ),
            pilot=pilot,
        )
        again.query_one("#add-target", Input).value = target.value
        await pilot.press("enter")
        await wait_for(lambda: again.check is not None, 30, pilot=pilot)
        await wait_for(lambda: again.focused is again.query_one("#add-name", Input), pilot=pilot)
        assert again.check is not None and again.check.status == "trusted", again.check
        assert has_line(screen_text(app), "Enter: next field")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, AddHostScreen)  # nothing added
        assert "added" not in watched.hosts_file.read_text()


async def test_launch_and_diagnosis_say_what_enter_does(make_queue_fleet, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    qf = await make_queue_fleet(1, workload=True)
    app = queue_app(qf, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("L")
        await planned(pilot, app)
        await wait_for(lambda: "▶ Launch ◀" in screen_text(app), pilot=pilot)
        assert has_line(screen_text(app), "Enter: launch", "Esc: cancel")
        await pilot.press("escape")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)

        await pilot.press("d")
        await wait_for(lambda: isinstance(app.screen, DiagnosisScreen), pilot=pilot)
        assert has_line(screen_text(app), "Enter: close")
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)


async def test_a_changed_key_at_80x24_keeps_close_and_its_keys_in_sight(tmp_path: Path) -> None:
    """Hour s19b #10: a changed key's text ran past the screen's bottom at 80x24 and took
    the Close button and the key line with it; the text now scrolls above them."""
    old, new = "SHA256:" + "o" * 43, "SHA256:" + "n" * 43
    files = "/tmp/hourD-env/proj/known_hosts, /root/.ssh/known_hosts"
    remove = " && ".join(f"ssh-keygen -R '[127.0.0.1]:22901' -f {f}" for f in files.split(", "))
    changed = HostKeyError(  # the words known_hosts.py gives a changed key, in two files
        "box1",
        f"HOST KEY CHANGED for [127.0.0.1]:22901: {files} has {old}, the box now shows "
        f"{new}. Expected when a box was re-created (T6); otherwise someone may be "
        "intercepting the connection",
        f"if the box was re-created, run: {remove} — then connect again and compare the "
        "new fingerprint with the one your provider shows",
        kind="changed",
        presented=new,
        known=(old,),
    )
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        app.host_keys.refused("box1", changed)
        app.host_keys.review("box1")
        await wait_for(lambda: isinstance(app.screen, HostKeyScreen), pilot=pilot)
        await wait_for(lambda: "▶ Close ◀" in screen_text(app), pilot=pilot)
        await wait_for(
            lambda: has_line(screen_text(app), "Enter: close", "Esc: close"), pilot=pilot
        )
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot=pilot)
