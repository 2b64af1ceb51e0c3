"""`add` and `+` ask for what a first launch needs (issue 43): workdir, code, queue, run,
durable_dir and pull, with the platform profile's defaults offered, each checked by the
fleet file's own parser before anything is written; the block carries them, the fleet
loads, and a queue written into the created file passes `queue check`.

Real components: loopback asyncssh boxes, the console entry point under a
pseudo-terminal (and without one), the add screen driven by the Pilot at 80x24.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from support.cli import Terminal, arun, rgt
from support.waiting import wait_for
from textual.app import App
from textual.widgets import Button, Input, Select

from rgt_tui.demo.loopback import LoopbackBox, LoopbackFleet
from rgt_tui.screens.add_host import AddHostScreen
from rgt_tui.services.fleet.add_keys import DEFAULT_RUN, LAUNCH_KEYS
from rgt_tui.services.fleet.file import load_fleet

NO_COLOR = {"NO_COLOR": "1"}
HAND_WRITTEN = (
    "# my fleet   (hand-written: keep this spacing)\n"
    "[[hosts]]\n"
    'name = "old-box"   # rented last week\n'
    'ssh  = "root@203.0.113.7:2222"\n'
    'pull = ["/workspace/runs"]\n'
)


def pasted(fleet: LoopbackFleet, box: LoopbackBox, port: int | None = None) -> str:
    return f"ssh -p {port or box.port} -i {fleet.client_key} {fleet.username}@127.0.0.1"


async def held_relay(port: int) -> tuple[asyncio.Server, asyncio.Event]:
    """A TCP relay to ``port`` that holds every connection until the event is set: a
    check through it is still running for as long as the test needs."""
    release = asyncio.Event()

    async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        finally:
            sink.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await release.wait()
        box_reader, box_writer = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.gather(
            pipe(reader, box_writer), pipe(box_reader, writer), return_exceptions=True
        )

    return await asyncio.start_server(handle, "127.0.0.1", 0), release


def one_cell(queue: Path, tmp_path: Path) -> None:
    """A cell in the queue file `add` created (its comments kept), its config present."""
    (tmp_path / "configs").mkdir(exist_ok=True)
    (tmp_path / "configs" / "baseline.yaml").write_text("lr: 0.1\n")
    queue.write_text(queue.read_text() + "configs/baseline.yaml detection 2\n")


async def test_cli_at_a_terminal_asks_the_launch_keys_with_the_profiles_defaults(
    make_loopback_fleet, home, tmp_path
):
    fleet = await make_loopback_fleet(1)
    box = fleet.boxes[0]
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(HAND_WRITTEN)
    code = tmp_path / "proj"
    code.mkdir()
    term = Terminal(
        "add", pasted(fleet, box), "--hosts", hosts, cwd=tmp_path, env=NO_COLOR,
        output_on_terminal=True,
    )  # fmt: skip
    await term.expect("Name [")
    term.type("b1")
    await term.expect("[generic-ssh]: ")
    term.type("runpod")
    await term.expect("0: free): ")
    term.type("")
    await term.expect("Trust this key? Type y or yes to trust; anything else cancels [N]: ")
    term.type("y")  # then what a first launch needs
    await term.expect("(code synced, cells run) [/workspace/code]: ")  # RunPod's volume
    term.type("")  # Enter takes it
    await term.expect("Local code tree to sync (none: no sync) [none]: ")  # not a git tree
    term.type(str(tmp_path / "nope"))
    await term.expect_asked("is not a folder on this machine")  # asked again
    term.type(str(code))
    await term.expect("[queues/b1.txt]: ")
    term.type("")
    await term.expect(f"fields bare [{DEFAULT_RUN}]: ")
    term.type('python train.py --config "{cfg}" --out {out}')
    await term.expect_asked("the placeholder {cfg} is inside quotes")  # the parser's own words
    # Pasted over two lines, as a page wraps it: one command (h619 #1: its first line,
    # ending in a backslash, was written alone).
    os.write(term.master, b"python3 train.py --config {cfg} \\\n  --out {out}\n")
    await term.expect("Durable dir on the box (results) [/workspace/runs]: ")
    term.type("")
    await term.expect("comma-separated [/workspace/runs]: ")
    term.type("")
    await term.expect("create it, empty, with how to write cells? [Y/n] ")
    term.type("")
    status, out, _ = await term.finish()
    assert status == 0, out

    text = hosts.read_text()
    assert text.startswith(HAND_WRITTEN)
    block = text[len(HAND_WRITTEN) :]
    for line in (
        'workdir = "/workspace/code"', f'code = "{code}"', 'queue = "queues/b1.txt"',
        'durable_dir = "/workspace/runs"', 'pull = ["/workspace/runs"]',
    ):  # fmt: skip
        assert line in block, block
    host = load_fleet(hosts).host("b1")
    assert (host.profile, host.workdir, host.durable_dir) == (
        "runpod",
        "/workspace/code",
        "/workspace/runs",
    )
    assert host.pull == ("/workspace/runs",) and host.pull_refused is None
    assert host.ready.code == code and host.run is not None
    assert host.run.split() == DEFAULT_RUN.split(), host.run
    assert host.queue == tmp_path / "queues" / "b1.txt"
    assert host.queue.read_text().startswith("# rgt-tui queue for b1")

    one_cell(host.queue, tmp_path)
    # With `code` set, queue check looks for the config in the code tree (ux-d #2).
    (code / "configs").mkdir()
    (code / "configs" / "baseline.yaml").write_text("lr: 0.1\n")
    checked = await arun("queue", "check", "--hosts", hosts, cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("1 cell") and "in 1 queue file" in checked.stdout


def test_without_a_terminal_the_flags_or_the_profiles_defaults(tmp_path, home):
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(HAND_WRITTEN)
    # Every host here is this machine, each added for its keys: --same-account says yes
    # to another entry of one account (tests/services/test_add_same_account.py).
    at = ("--hosts", str(hosts), "--same-account")

    # Refused before anything is written: the parser's message, the file untouched.
    bad = rgt(
        "add", "local", "--name", "x", "--run", "python t.py --out '{out}'", *at, cwd=tmp_path
    )
    assert bad.returncode == 2 and "run: the placeholder {out} is inside quotes" in bad.stderr
    field = rgt("add", "local", "--name", "x", "--run", "python t.py {config}", *at, cwd=tmp_path)
    assert field.returncode == 2 and "unknown field {config}" in field.stderr
    lam = rgt("add", "local", "--name", "x", "--profile", "lambda", *at, cwd=tmp_path)
    assert lam.returncode == 2 and "still holds <filesystem>" in lam.stderr
    assert hosts.read_text() == HAND_WRITTEN and not (tmp_path / "queues").exists()

    # No flags: the profile's defaults, and the queue file created (empty, commented).
    vast = rgt("add", "local", "--name", "v", "--profile", "vastai", *at, cwd=tmp_path)
    assert vast.returncode == 0, vast.stderr
    assert f"created {tmp_path / 'queues' / 'v.txt'}" in vast.stdout
    host = load_fleet(hosts).host("v")
    assert (host.workdir, host.durable_dir, host.pull) == (
        "/workspace/code", "/workspace/runs", ("/workspace/runs",),
    )  # fmt: skip
    assert host.run == DEFAULT_RUN and host.ready.code is None
    assert host.queue == tmp_path / "queues" / "v.txt" and host.queue.is_file()

    # Run inside a git work tree (not rgt-tui's own): that tree is the code default.
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    inside = rgt("add", "local", "--name", "g", "--profile", "lambda", "--durable-dir",
                 "/lambda/nfs/fs1/runs", *at, cwd=repo / "src")  # fmt: skip
    assert inside.returncode == 0, inside.stderr
    lam_host = load_fleet(hosts).host("g")
    assert lam_host.ready.code == repo and lam_host.pull == ("/lambda/nfs/fs1/runs",)
    assert lam_host.workdir == "~/code"

    # Every flag.
    code = tmp_path / "proj"
    code.mkdir()
    given = rgt(
        "add", "local", "--name", "f", "--workdir", "/srv/work", "--code", str(code),
        "--queue", "q/f.txt", "--run", "python go.py {cfg} [--epochs {epochs}] {out}",
        "--durable-dir", "/srv/res", "--pull", "/srv/res, /srv/logs", *at, cwd=tmp_path,
    )  # fmt: skip
    assert given.returncode == 0, given.stderr
    f = load_fleet(hosts).host("f")
    assert (f.workdir, f.durable_dir, f.pull) == (
        "/srv/work",
        "/srv/res",
        ("/srv/res", "/srv/logs"),
    )
    assert f.ready.code == code and f.queue == tmp_path / "q" / "f.txt"
    assert f.run == "python go.py {cfg} [--epochs {epochs}] {out}"
    # none leaves a key out.
    bare = rgt("add", "local", "--name", "n", "--code", "none", "--queue", "none", "--run",
               "none", *at, cwd=tmp_path)  # fmt: skip
    assert bare.returncode == 0, bare.stderr
    n = load_fleet(hosts).host("n")
    assert (n.queue, n.run, n.ready.code, n.pull) == (None, None, None, ("~/runs",))
    assert hosts.read_text().startswith(HAND_WRITTEN) and f.queue.is_file()


def test_a_file_that_does_not_read_as_a_queue_is_refused_with_its_line(tmp_path, home):
    """A training script or a checkpoint named as the queue (a slip of the completion)
    was written into the fleet file, to be refused only at the first launch."""
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(HAND_WRITTEN)
    at = ("--hosts", str(hosts), "--same-account")
    (tmp_path / "train.py").write_text("import torch\n\nmodel = torch.nn.Linear(3, 4)\n")
    (tmp_path / "last.pt").write_bytes(bytes(range(256)) * 8)

    script = rgt("add", "local", "--name", "s", "--queue", "train.py", *at, cwd=tmp_path)
    assert script.returncode == 2
    assert "queue: train.py is a Python script by its name, not a queue file" in script.stderr
    # Its fix is another name, not `queue check`, which reads its lines as cells (h555 #3).
    assert "fix: name your queue file" in script.stderr and "queue check" not in script.stderr
    ckpt = rgt("add", "local", "--name", "s", "--queue", "last.pt", *at, cwd=tmp_path)
    assert ckpt.returncode == 2 and "last.pt is a checkpoint by its name" in ckpt.stderr
    # Nor is one made under such a name (h555 #3: configs/x.yaml was created, a queue).
    made = rgt("add", "local", "--name", "s", "--queue", "configs/x.yaml", *at, cwd=tmp_path)
    assert made.returncode == 2 and "configs/x.yaml is a config by its name" in made.stderr
    assert not (tmp_path / "configs" / "x.yaml").exists()
    # A file that parses as no queue, by a name that says nothing: its first bad line.
    (tmp_path / "notes").write_text("import torch\n\nmodel = torch.nn.Linear(3, 4)\n")
    notes = rgt("add", "local", "--name", "s", "--queue", "notes", *at, cwd=tmp_path)
    assert notes.returncode == 2
    assert "queue: notes does not read as a queue file: line 3: too many fields" in notes.stderr
    assert "rgt-tui queue check notes names every line" in notes.stderr
    assert hosts.read_text() == HAND_WRITTEN

    # A config that parses as queue lines (h553 #2: taken, then held back from every
    # sync, which removed it from the boxes): refused by its name, and by its YAML keys.
    (tmp_path / "base.yaml").write_text("lr: 0.001\nbatch_size: 64\noptimizer: adam  # x\n")
    (tmp_path / "base").write_text("lr: 0.001\nbatch_size: 64\n")
    (tmp_path / "two.py").write_text("import os\nimport sys\n")  # it parses
    cfg = rgt("add", "local", "--name", "s", "--queue", "base.yaml", *at, cwd=tmp_path)
    assert cfg.returncode == 2, cfg.stderr
    assert "queue: base.yaml is a config by its name, not a queue file" in cfg.stderr
    keys = rgt("add", "local", "--name", "s", "--queue", "base", *at, cwd=tmp_path)
    assert keys.returncode == 2, keys.stderr
    assert "queue: base does not read as a queue file: line 1: 'lr:' is a YAML key" in (keys.stderr)
    py = rgt("add", "local", "--name", "s", "--queue", "two.py", *at, cwd=tmp_path)
    assert py.returncode == 2 and "two.py is a Python script by its name" in py.stderr
    assert hosts.read_text() == HAND_WRITTEN

    # A key: said to be one, its lines never shown (h493 #4: `queue check`, the fix the
    # refusal named, printed every base64 line of a private key).
    key = tmp_path / "client_key"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n")
    pem = rgt("add", "local", "--name", "s", "--queue", "client_key", *at, cwd=tmp_path)
    assert pem.returncode == 2 and "a key or certificate, not a queue file" in pem.stderr
    assert "b3Blbn" not in pem.stderr
    # Nor in the forms that do not start with the header (review h494 #3).
    (tmp_path / "bom.key").write_text("\ufeff" + key.read_text())
    (tmp_path / "id.ppk").write_text(
        "PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 1\nAAAAIPRIV\n"
    )
    (tmp_path / "bag.pem").write_text("Bag Attributes\n    localKeyID: 01\nMIIEvQIBADAN\n")
    for name in ("client_key", "bom.key", "id.ppk", "bag.pem"):
        check = rgt("queue", "check", name, "--hosts", str(hosts), cwd=tmp_path)
        said = check.stdout + check.stderr
        assert check.returncode != 0 and "a key or certificate" in said, (name, said)
        assert not any(s in said for s in ("b3Blbn", "AAAAIPRIV", "MIIEvQ")), (name, said)

    # Another host's queue file (review h492 #3). A queue whose configs are still to
    # write, or found only through the run template's `cd` (review h494 #2), is taken:
    # launch and `queue check` say what is missing, knowing the template.
    (tmp_path / "q.txt").write_text("# mine\nconfigs/a.yaml detection 3\nconfigs/b.yaml x\n")
    ok = rgt("add", "local", "--name", "s", "--queue", "q.txt", *at, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    shared = rgt("add", "local", "--name", "t", "--queue", "q.txt", *at, cwd=tmp_path)
    assert shared.returncode == 2
    assert "queue: q.txt is s's queue file already: every cell of it would run on both" in (
        shared.stderr
    )
    assert load_fleet(hosts).host("s").queue == tmp_path / "q.txt"


# -- the TUI's add screen ---------------------------------------------------------------------


class AddApp(App[None]):
    """Just the add screen, and what it dismissed with."""

    def __init__(self, fleet_file: Path) -> None:
        super().__init__()
        self.fleet_file = fleet_file
        self.results: list[object] = []

    def on_mount(self) -> None:
        self.push_screen(AddHostScreen(self.fleet_file), self.results.append)


async def press(pilot, button: Button) -> None:
    """Press ``button`` from the keyboard, as at 80x24 (focus scrolls it into view)."""
    await wait_for(lambda: not button.disabled, what="the button enabled", pilot=pilot)
    button.focus()
    await wait_for(lambda: button.has_focus, what="the button focused", pilot=pilot)
    await pilot.press("enter")


async def test_add_screen_launch_fields_follow_the_profile_fit_80x24_and_are_written(
    make_loopback_fleet, home, tmp_path
):
    fleet = await make_loopback_fleet(1)
    box = fleet.boxes[0]
    hosts = tmp_path / "hosts.toml"
    relay, release = await held_relay(box.port)
    relay_port = relay.sockets[0].getsockname()[1]
    app = AddApp(hosts)
    async with relay, app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, AddHostScreen)

        def field(key: str) -> Input:
            return screen.query_one(f"#add-{key}", Input)

        screen.query_one("#add-target", Input).value = pasted(fleet, box, relay_port)
        name = screen.query_one("#add-name", Input)
        await wait_for(lambda: field("queue").value == f"queues/{name.value}.txt", pilot=pilot)
        assert field("workdir").value == "~/code"  # generic-ssh's
        name.value = "b1"
        await wait_for(lambda: field("queue").value == "queues/b1.txt", pilot=pilot)
        field("workdir").value = "/data/mine"  # typed: kept when the profile changes
        await pilot.pause()
        screen.query_one("#add-profile", Select).value = "runpod"
        await wait_for(lambda: field("durable_dir").value == "/workspace/runs", pilot=pilot)
        assert field("pull").value == "/workspace/runs" and field("run").value == DEFAULT_RUN
        assert field("workdir").value == "/data/mine" and field("code").value == ""

        # Keyboard-reachable at 80x24: Tab reaches every field, and each is on screen.
        screen.query_one("#add-target", Input).focus()
        reached: set[str] = set()
        for _ in range(20):
            await pilot.press("tab")
            focused = app.focused
            if focused is not None and focused.id in {f"add-{k}" for k in LAUNCH_KEYS}:
                region = focused.region
                assert region.area > 0, focused.id
                assert screen.get_widget_at(region.x, region.y)[0] is focused, focused.id
                reached.add(focused.id)
        assert reached == {f"add-{k}" for k in LAUNCH_KEYS}

        # Enter in a field moves on; it never checks or adds.
        field("durable_dir").focus()
        await pilot.press("enter")
        await wait_for(lambda: field("pull").has_focus, what="Enter: next field", pilot=pilot)
        assert screen.check is None

        # A bad run template is refused with the parser's words, its field focused.
        field("run").value = 'python t.py --config "{cfg}"'
        await press(pilot, screen.query_one("#add-check", Button))
        await wait_for(lambda: field("run").has_focus, what="the run refused", pilot=pilot)
        assert "is inside quotes" in str(screen.query_one("#add-status").render())
        assert screen.check is None and not hosts.exists()

        # The check ends while the user types in a field: the focus stays there (on
        # Cancel, a typed t would trust the key).
        field("run").value = "python t.py --config {cfg} --out {out}"
        await pilot.pause()  # the field's change handled before the button takes the focus
        # Pressed as a click: the keyboard path to Check is the step above (an Enter here
        # was lost 2 runs in 12 under load, not yet understood: see the closing note).
        screen.query_one("#add-check", Button).press()
        await wait_for(
            lambda: "checking the host key" in str(screen.query_one("#add-status").render()),
            what="the key check started (held by the relay)",
            pilot=pilot,
        )
        field("pull").focus()
        await wait_for(lambda: field("pull").has_focus, what="the user in a field", pilot=pilot)
        assert screen.check is None  # held by the relay
        release.set()
        await wait_for(lambda: screen.check is not None, what="the key check", pilot=pilot)
        assert screen.check.status == "unknown"
        assert field("pull").has_focus, app.focused
        await press(pilot, screen.query_one("#add-trust", Button))
        add = screen.query_one("#add-add", Button)
        await wait_for(lambda: not add.disabled, what="the key trusted", pilot=pilot)
        await press(pilot, add)
        await wait_for(lambda: app.results, what="the screen dismissed", pilot=pilot)

    (host,) = app.results
    assert host == load_fleet(hosts).host("b1")
    assert (host.profile, host.workdir, host.durable_dir) == (
        "runpod",
        "/data/mine",
        "/workspace/runs",
    )
    assert host.pull == ("/workspace/runs",) and host.ready.code is None
    assert host.run == "python t.py --config {cfg} --out {out}"
    assert host.queue == tmp_path / "queues" / "b1.txt" and host.queue.is_file()


def test_a_clone_of_rgt_tui_or_a_fleet_code_is_never_overridden_by_the_cwd(tmp_path, home):
    """A user's hour (s33 TUI #3): `+` in the demo started from a clone of rgt-tui wrote
    `code = "<the clone>"` over the fleet's own tree, and `y` would have sent the clone."""
    at = ("--same-account",)
    clone = tmp_path / "rgt-clone"
    (clone / ".git").mkdir(parents=True)
    (clone / "pyproject.toml").write_text('[project]\nname = "rgt-tui"\nversion = "0"\n')
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(HAND_WRITTEN)
    added = rgt("add", "local", "--name", "c", "--hosts", str(hosts), *at, cwd=clone)
    assert added.returncode == 0, added.stderr
    assert load_fleet(hosts).host("c").ready.code is None

    # [fleet] code set: a host added inside another git tree takes the fleet's tree.
    repo, tree = tmp_path / "repo", tmp_path / "tree"
    (repo / ".git").mkdir(parents=True)
    tree.mkdir()
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(f'[fleet]\ncode = "{tree}"\n\n{HAND_WRITTEN}')
    inside = rgt("add", "local", "--name", "g", "--hosts", str(fleet), *at, cwd=repo)
    assert inside.returncode == 0, inside.stderr
    assert "code =" not in fleet.read_text().split('name = "g"')[1]
    assert load_fleet(fleet).host("g").ready.code == tree
