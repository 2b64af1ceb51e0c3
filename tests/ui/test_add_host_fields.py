"""ux-a #15: on the add screen, Tab into a launch-key field leaves its default
unselected with the cursor at its end, so the first key typed edits the default instead
of wiping it; and a value the user typed (or a pull that follows a typed durable_dir)
survives a name or profile change. The real add screen, driven by the Pilot at 80x24.
"""

from __future__ import annotations

from pathlib import Path

from support.pilot import click, wait_for
from textual import events
from textual.app import App
from textual.widgets import Button, Input, Select

from rgt_tui.screens.add_host import AddHostScreen
from rgt_tui.screens.add_host_keys import LaunchKeysForm
from rgt_tui.services.fleet.add_keys import DEFAULT_RUN
from rgt_tui.services.fleet.file import load_fleet


class AddApp(App[None]):
    """Just the add screen."""

    def __init__(self, fleet_file: Path) -> None:
        super().__init__()
        self.fleet_file = fleet_file

    def on_mount(self) -> None:
        self.push_screen(AddHostScreen(self.fleet_file))


async def test_tab_into_a_prefilled_field_and_type_appends_to_its_default(tmp_path, home):
    app = AddApp(tmp_path / "hosts.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, AddHostScreen)
        run = screen.query_one("#add-run", Input)
        await wait_for(lambda: run.value == DEFAULT_RUN, what="the run default", pilot=pilot)
        for _ in range(12):  # Tab from the SSH command field, as the user did
            if run.has_focus:
                break
            await pilot.press("tab")
        assert run.has_focus, app.focused
        assert run.selection.is_empty and run.cursor_position == len(DEFAULT_RUN)
        await pilot.press("Z")
        assert run.value == DEFAULT_RUN + "Z"


async def test_tab_back_to_a_pasted_ssh_command_and_type_keeps_it(tmp_path, home):
    # Hour s19b #11: the SSH command, name and cost fields selected their text on focus:
    # Tab round to the pasted command and one key replaced it whole.
    app = AddApp(tmp_path / "hosts.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, AddHostScreen)
        pasted = "ssh -p 22034 root@ssh4.vast.ai"
        for ident, value in (("#add-target", pasted), ("#add-name", "box7"), ("#add-cost", "1.2")):
            field = screen.query_one(ident, Input)
            field.value = value
            for _ in range(30):  # Tab round to it, as the user did
                await pilot.press("tab")
                if field.has_focus:
                    break
            assert field.has_focus, (ident, app.focused)
            await pilot.press("9")
            assert field.value == value + "9", ident


async def test_a_command_pasted_over_lines_continued_by_backslashes_is_one(tmp_path, home):
    """h555 #1: a provider's command wrapped with a backslash kept only `ssh -p 41071 \\`
    (an Input keeps a paste's first line), and Enter refused it."""
    from textual import events

    app = AddApp(tmp_path / "hosts.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, AddHostScreen)
        target = screen.query_one("#add-target", Input)
        target.focus()
        await pilot.pause()
        target.post_message(events.Paste("ssh -p 41071 \\\n  -i ~/.ssh/k root@10.0.0.5\n"))
        await pilot.pause()
        assert target.value == "ssh -p 41071  -i ~/.ssh/k root@10.0.0.5", target.value
        # As terminals send a paste: its line breaks as CR (review h556 #1).
        target.value = ""
        target.post_message(events.Paste("ssh -p 41071 \\\r  -i ~/.ssh/k root@10.0.0.5\r"))
        await pilot.pause()
        assert target.value == "ssh -p 41071  -i ~/.ssh/k root@10.0.0.5", target.value
        target.post_message(events.Paste("x\ny"))  # an ordinary paste: its first line
        await pilot.pause()
        assert target.value.endswith("root@10.0.0.5x"), target.value
        # The run template is a command too (h619 #1: its first line alone was written).
        run = screen.query_one("#add-run", Input)
        run.value = ""
        run.focus()
        await pilot.pause()
        run.post_message(events.Paste("python3 train.py --config {cfg} \\\r  --out {out}\r"))
        await pilot.pause()
        assert run.value == "python3 train.py --config {cfg}  --out {out}", run.value


async def type_text(pilot, text: str) -> None:  # type: ignore[no-untyped-def]
    await pilot.press(*("space" if ch == " " else ch for ch in text))


async def test_pull_follows_a_typed_durable_dir_through_name_and_profile_changes(tmp_path, home):
    # The user's session: paste, Tab to durable_dir, Ctrl-U and type one; pull follows
    # it. Back in the name field a typed name re-offered the profile's defaults, and pull
    # went back to ~/runs beside the typed durable_dir, into hosts.toml so.
    hosts = tmp_path / "hosts.toml"
    app = AddApp(hosts)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, AddHostScreen)
        durable = screen.query_one("#add-durable_dir", Input)
        pull = screen.query_one("#add-pull", Input)
        name = screen.query_one("#add-name", Input)
        await wait_for(lambda: pull.value == "~/runs", what="the pull default", pilot=pilot)
        screen.query_one("#add-target", Input).value = "local"
        for _ in range(12):
            if durable.has_focus:
                break
            await pilot.press("tab")
        assert durable.has_focus, app.focused
        await pilot.press("ctrl+u")
        await type_text(pilot, "/tmp/tuibox-res")
        await wait_for(lambda: pull.value == "/tmp/tuibox-res", what="pull to follow", pilot=pilot)

        for _ in range(12):  # Shift-Tab back to the name, as the user did
            if name.has_focus:
                break
            await pilot.press("shift+tab")
        assert name.has_focus, app.focused
        await pilot.press("ctrl+u")
        await type_text(pilot, "tuibox")
        await pilot.pause()
        assert screen.query_one("#add-queue", Input).value == "queues/tuibox.txt"  # followed
        assert (durable.value, pull.value) == ("/tmp/tuibox-res", "/tmp/tuibox-res")

        # A profile change keeps both too (vastai offers its own folders).
        screen.query_one("#add-profile", Select).value = "vastai"
        await pilot.pause()
        assert screen.query_one("#add-workdir", Input).value != "~/code"  # vastai's, followed
        assert (durable.value, pull.value) == ("/tmp/tuibox-res", "/tmp/tuibox-res")

        # What goes into hosts.toml is what the fields show.
        await click(pilot, "#add-check")
        add = screen.query_one("#add-add", Button)
        await wait_for(lambda: not add.disabled, what="this machine checked", pilot=pilot)
        await click(pilot, "#add-add")
        await wait_for(lambda: not isinstance(app.screen, AddHostScreen), pilot=pilot)
    host = load_fleet(hosts).host("tuibox")
    assert (host.durable_dir, host.pull) == ("/tmp/tuibox-res", ("/tmp/tuibox-res",))


async def test_a_typed_pull_is_never_overwritten(tmp_path, home):
    app = AddApp(tmp_path / "hosts.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, AddHostScreen)
        pull = screen.query_one("#add-pull", Input)
        await wait_for(lambda: pull.value == "~/runs", what="the pull default", pilot=pilot)
        pull.value = "~/runs/a, ~/runs/b"
        screen.query_one("#add-durable_dir", Input).value = "/tmp/elsewhere"
        screen.query_one("#add-name", Input).value = "other"
        screen.query_one("#add-profile", Select).value = "vastai"
        await pilot.pause()
        assert pull.value == "~/runs/a, ~/runs/b"


async def test_the_launch_field_with_the_cursor_is_marked(tmp_path, home):
    """Hour s33 TUI #2: the borderless rows looked like text, and typing after Shift+Tab
    edited one unseen. The row with the cursor: its label in the accent, its field lit."""
    from textual.widgets import Static

    app = AddApp(tmp_path / "hosts.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        run, queue = screen.query_one("#add-run", Input), screen.query_one("#add-queue", Input)
        await wait_for(lambda: run.value == DEFAULT_RUN, what="the run default", pilot=pilot)

        def label(field: Input) -> Static:
            return field.parent.query_one(".launch-label", Static)  # type: ignore[union-attr]

        run.focus()
        await pilot.pause()
        assert run.has_focus
        await wait_for(lambda: label(run).styles.text_style.bold, what="the label lit", pilot=pilot)
        assert run.styles.background != queue.styles.background
        assert label(run).styles.color != label(queue).styles.color
        assert not label(queue).styles.text_style.bold
        queue.focus()  # the mark follows the cursor
        await wait_for(
            lambda: label(queue).styles.text_style.bold and not label(run).styles.text_style.bold,
            what="the mark on the queue row",
            pilot=pilot,
        )
        # The run field's blur and the queue field's focus travel up through different
        # widgets' queues; on a loaded machine the blur can arrive last (a CI failure:
        # no row marked). Deliver it last, as that machine did: the mark stays.
        screen.query_one(LaunchKeysForm).post_message(events.DescendantBlur(run))
        await pilot.pause()
        assert label(queue).styles.text_style.bold, "the late blur unmarked the focused row"


async def test_a_command_typed_key_by_key_leaves_the_suggested_name_cursor_at_its_end(
    tmp_path, home
):
    # s35: typed key by key, the first suggestion ("1" of "root@1…") put the cursor at 1,
    # and every later suggestion kept it there: the name typed after Tab went into the
    # middle ("1box2b27-0-0-1-44195").
    app = AddApp(tmp_path / "hosts.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, AddHostScreen)
        await type_text(pilot, "ssh -p 44195 root@127.0.0.1")
        name = screen.query_one("#add-name", Input)
        await wait_for(lambda: name.value == "127-0-0-1-44195", what="the name", pilot=pilot)
        await pilot.press("tab")
        assert name.has_focus, app.focused
        # The suggestion is selected as the cursor comes: a name typed replaces it (hour
        # s45a #11: "gpu4" typed became "127-0-0-1-2222gpu4"); End keeps it, cursor at
        # its end, and what is typed then goes on from there.
        await pilot.press("end")
        await type_text(pilot, "-b")
        assert name.value == "127-0-0-1-44195-b", name.value
    app = AddApp(tmp_path / "hosts.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        await type_text(pilot, "ssh -p 44195 root@127.0.0.1")
        name = app.screen.query_one("#add-name", Input)
        await wait_for(lambda: name.value == "127-0-0-1-44195", what="the name", pilot=pilot)
        await pilot.press("tab")
        await type_text(pilot, "gpu4")
        assert name.value == "gpu4", name.value
        await pilot.press("shift+tab", "tab")  # a name typed is kept as the cursor comes
        await type_text(pilot, "b")
        assert name.value == "gpu4b", name.value


async def test_enter_on_the_profile_list_moves_on_whether_or_not_it_changed(tmp_path, home):
    """h581 #2: Enter on the guessed profile (no change, so no Select.Changed) closed the
    list and left the cursor there; each Enter after opened it again. Enter on another
    profile moves on too; Escape closes the list and leaves the cursor on it."""
    app = AddApp(tmp_path / "hosts.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        select = screen.query_one("#add-profile", Select)
        cost = screen.query_one("#add-cost", Input)
        name = screen.query_one("#add-name", Input)
        before = select.value
        for keys, value in (
            (("enter", "enter"), before),  # the chosen one, unchanged
            (("enter", "down", "enter"), None),  # another one
        ):
            name.focus()
            await pilot.press("tab")
            await wait_for(lambda: select.has_focus, what="the profile select", pilot=pilot)
            chosen = select.value
            await pilot.press(*keys)
            await wait_for(lambda: cost.has_focus, what=f"{keys} to move on", pilot=pilot)
            assert not select.expanded
            if value is not None:
                assert select.value == value
            else:
                assert select.value != chosen
        await pilot.press("shift+tab")
        await wait_for(lambda: select.has_focus, what="back on the select", pilot=pilot)
        chosen = select.value
        await pilot.press("enter")
        await wait_for(lambda: select.expanded, what="the list open", pilot=pilot)
        hint = str(screen.query_one("#add-hint").render())
        assert "Esc: close the list" in hint and "nothing written" not in hint, hint  # h585 #4
        await pilot.press("down", "escape")
        await wait_for(lambda: not select.expanded, what="Escape to close the list", pilot=pilot)
        await pilot.pause()
        assert select.has_focus and select.value == chosen  # nothing chosen, cursor stays


async def test_a_taken_name_is_refused_as_the_name_first(tmp_path, home):
    """h581 #3: a taken name was refused as its queue file's (the queue field follows the
    name), then, once the queue was changed, as the name: the CLI's order is the name's."""
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        '[[hosts]]\nname = "box-1"\nssh = "root@10.0.0.9"\nqueue = "queues/box-1.txt"\n'
    )
    (tmp_path / "queues").mkdir()
    (tmp_path / "queues" / "box-1.txt").write_text("")
    app = AddApp(hosts)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = app.screen
        screen.query_one("#add-target", Input).value = "ssh -p 2222 root@10.0.0.5"
        screen.query_one("#add-name", Input).value = "box-1"
        screen.query_one("#add-cost", Input).value = "abc"
        queue = screen.query_one("#add-queue", Input)
        await wait_for(lambda: queue.value == "queues/box-1.txt", what="the queue", pilot=pilot)
        await click(pilot, "#add-check")
        status = screen.query_one("#add-status")
        await wait_for(
            lambda: "host name 'box-1' is already used" in str(status.render()),
            what="the name's refusal",
            pilot=pilot,
        )


async def test_a_field_offered_again_keeps_its_cursor_at_the_end(tmp_path, home):
    """h604 #1: a default offered again (the name or profile changed) left the cursor where
    the first offer ended; Ctrl+U then kept the new offer's tail and the path typed was
    spliced into it ('/tmp/b2/code' + 'pace/code'), a valid path written as typed."""
    from rgt_tui.services.fleet.append import LaunchKeys

    app = AddApp(tmp_path / "hosts.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, AddHostScreen)
        workdir = screen.query_one("#add-workdir", Input)
        await wait_for(lambda: workdir.value != "", what="the workdir default", pilot=pilot)
        form = screen.query_one(LaunchKeysForm)
        longer = "/workspace/code"
        form.offer(LaunchKeys(workdir=longer, durable_dir="/workspace/runs", pull=()))
        await pilot.pause()
        assert workdir.value == longer and workdir.cursor_position == len(longer)
        workdir.focus()
        await pilot.pause()
        await pilot.press("ctrl+u")
        await type_text(pilot, "/tmp/b2")
        assert workdir.value == "/tmp/b2", workdir.value
