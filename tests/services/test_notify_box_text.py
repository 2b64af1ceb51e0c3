"""A watch notification quotes the box's words as plain text (issue 39): what a rented box
wrote into an event (a cell's name, its last line) reaches a notification target with
every control character shown as an escape, its markup-looking text as those characters,
and the body declared TEXT to Apprise (an HTML target gets it escaped, never as HTML),
its Markdown links, emphasis and spoilers made inert for every target (Discord renders
Markdown in plain content). Sent through Apprise's real ``json://`` target to a local HTTP server."""

from __future__ import annotations

import json
from pathlib import Path

import apprise
from support.webhook import webhook

from rgt_tui.domain.config_parse import parse_fleet
from rgt_tui.services.watch.events import WatchEvent
from rgt_tui.services.watch.sinks.notify import Notifier

HOSTILE = (
    "[link=https://evil]x[/link] <a href='https://evil'>y</a> "
    "\x1b]52;c;cm0gLXJmIH4=\x1b\\\x1b[2J\x1b]8;;https://evil\x1b\\L\x1b]8;;\x1b\\\x07\x1b\u009b2J"
)
CONTROL = {chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))} - {"\n"}


async def sent_to(tmp_path: Path, event: WatchEvent, paths: list[str]) -> list[dict]:
    """``event`` through a real Notifier to a local webhook, one target per path (a path
    with a query sends that format); what each path received, in turn."""
    with webhook() as hook:
        urls = [hook.url(p) for p in paths]
        text = '[[hosts]]\nname = "box1"\nssh = "root@x:22"\npull = ["/w"]\n'
        text += f"notify = {json.dumps(urls)}\n"
        fleet = parse_fleet(Path("/f/hosts.toml"), text, ["generic-ssh"])
        notifier = Notifier(fleet, tmp_path / "sent.jsonl", retry_delays=())
        await notifier.on_event(event)
        await notifier.drain()
        return [got for p in paths for got in hook.at(p.split("?")[0])]


async def test_a_hostile_event_arrives_as_printable_plain_text(tmp_path: Path) -> None:
    event = WatchEvent(
        "queue_failed", "box1", "queue_failed:box1:1", f"cell {HOSTILE} failed", HOSTILE
    )
    [sent] = await sent_to(tmp_path, event, ["/ok"])
    body, title = sent["message"], sent["title"]
    for part in (body, title):
        assert not set(part) & CONTROL, f"control characters reach the target: {part!r}"
        assert "\\x1b\\]52;c;cm0gLXJmIH4=" in part  # shown, not acted on (its ']' inert)
        # As written, its Markdown brackets made inert (a chat target renders Markdown),
        # its URLs' "://" broken by a zero-width space (a bare URL is a link there too).
        assert (
            "\\[link=https:/\u200b/evil\\]x\\[/link\\] <a href='https:/\u200b/evil'>y</a>" in part
        )


MARKDOWN = (
    "see [the results](https://evil/x) ![](https://evil/px) *now* `rm` ||hid|| ~~s~~ \\[y](z)"
)


async def test_markdown_in_box_text_reaches_every_target_inert(tmp_path: Path) -> None:
    """A box's ``[text](url)`` would be a link on a target that renders Markdown (Discord
    does, in plain content): it arrives escaped, on a plain target and on one Apprise
    formats as Markdown alike, in the title and the body; underscores stay as written."""
    event = WatchEvent(
        "queue_failed", "box1", "queue_failed:box1:2", f"cell oom_kill {MARKDOWN}", MARKDOWN
    )
    plain, md = await sent_to(tmp_path, event, ["/plain", "/md?format=markdown"])
    for sent in (plain, md):
        for part in (sent["title"], sent["message"]):
            # Every '[' is escaped: no link, no image, whatever Apprise adds on top.
            assert "[the results]" not in part and "![]" not in part, part
            assert "](https://evil/x)" not in part.replace("\\]", ""), part
    for part in (plain["title"], plain["message"]):
        assert "\\[the results\\](https:/\u200b/evil/x) !\\[\\](https:/\u200b/evil/px)" in part
        # Every backtick of the box's is escaped too (ux-i 2): no code span of its own.
        assert "\\*now\\* \\`rm\\` \\|\\|hid\\|\\| \\~\\~s\\~\\~ \\\\\\[y\\](z)" in part
    assert "cell oom_kill see" in plain["title"]


async def test_our_own_words_reach_the_target_without_backslashes(tmp_path: Path) -> None:
    """ux-b #11: rgt-tui's own "~21:46" and `command` read as written, while a box's strike
    that would close on them (``hi~2``), or its spoiler, stays escaped."""
    ours = (
        "preempted at ~21:46 (unreachable past its grace); moved it (repeats ~2m22s of work)\n"
        "`rgt-tui teardown box3` destroys it once its gate agrees"
    )
    event = WatchEvent("preempt_action", "box1", "moved:box1:1", "box1: moved", ours)
    box = WatchEvent("alert", "box1", "alert:box1:2", "box1: x", "cell ~1 hi~2 ||hid|| ```")
    with webhook() as hook:
        text = '[[hosts]]\nname = "box1"\nssh = "root@x:22"\npull = ["/w"]\n'
        text += f"notify = {json.dumps([hook.url('/ok')])}\n"
        fleet = parse_fleet(Path("/f/hosts.toml"), text, ["generic-ssh"])
        notifier = Notifier(fleet, tmp_path / "sent.jsonl", retry_delays=())
        await notifier.on_event(event)
        await notifier.on_event(box)
        await notifier.drain()
        got = {s["title"]: s for s in hook.at("/ok")}
        sent, hostile = got["[rgt-tui] box1: moved"], got["[rgt-tui] box1: x"]
    assert sent["message"].startswith(ours + "\n"), sent["message"]
    assert "cell ~1 hi\\~2 \\|\\|hid\\|\\| \\`\\`\\`" in hostile["message"], hostile["message"]


async def test_box_mentions_ping_no_one_and_its_backticks_are_escaped(tmp_path: Path) -> None:
    """ux-i 2: a mount the box names ``… @everyone ||sp|| `c```: Discord would ping the
    whole channel for ``@everyone``/``@here`` (or ``<@id>``) in content, and Apprise adds
    a ping of its own for each one it finds in an embed. What is sent has a zero-width
    space after each such ``@`` (reads the same, pings no one), the box's backticks
    escaped (every ``@word`` is broken: Apprise's Discord target pings any it finds);
    our own command spans stay as written."""
    mount = "/evil*bold* [click](https://evil.example) @everyone ||sp|| `c` @here <@123>"
    ours = "run `rgt-tui pull box1` (ssh root@box1)"
    event = WatchEvent(
        "alert", "box1", "alert:box1:3", f"box1: disk.inodes {mount}", f"{mount}\n{ours}"
    )
    sent = await sent_to(tmp_path, event, ["/plain", "/md?format=markdown"])
    assert len(sent) == 2
    zw = "\u200b"
    for got in sent:  # as Apprise sends it plain and formatted as Markdown
        for part in (got["title"], got["message"]):
            for mention in ("@everyone", "@here", "<@123"):
                assert mention not in part, part
            assert f"@{zw}everyone" in part and f"@{zw}here" in part and f"<@{zw}123" in part
            assert "`c`" not in part, part
    plain = sent[0]
    for part in (plain["title"], plain["message"]):
        assert "\\|\\|sp\\|\\| \\`c\\` @" in part, part
    assert f"{ours.replace('@', '@' + zw)}\n" in plain["message"], plain["message"]
    # Apprise's Discord target finds no ping in it either (it adds one for each it finds).
    discord = apprise.Apprise.instantiate("discord://1234/abcd")
    assert discord.ping_payload(plain["title"], plain["message"]) == {}


async def test_a_bare_url_from_the_box_arrives_unlinked(tmp_path: Path) -> None:
    """Slack, Discord, Telegram and ntfy link a bare ``https://…`` (Slack and Telegram a
    ``www.…`` too) with no Markdown at all: a hostile hour put a phishing URL in a GPU's
    name and it arrived clickable. Each ``://`` and ``www.`` gets a zero-width space: it
    reads the same, and no target's autolinker matches it."""
    name = "GPU is lost: reset at https://evil.example/reset or WWW.evil.example"
    event = WatchEvent("alert", "box1", "alert:box1:9", f"box1: gpu.xid {name}", name)
    [sent] = await sent_to(tmp_path, event, ["/ok"])
    for part in (sent["title"], sent["message"]):
        assert "://" not in part and "WWW." not in part, part
        assert "https:/\u200b/evil.example/reset or WWW\u200b.evil.example" in part, part
        assert part.replace("\u200b", "").count(name) == 1


async def test_a_huge_box_text_arrives_cut_not_refused(tmp_path: Path) -> None:
    """A GPU process named with 300,000 characters made a 300 KB message, which chat
    targets refuse whole (Telegram 4096, Discord 2000): the alert was lost (h532 #5). The
    name is cut where it enters, and any event's words in the message."""
    from support.samples import agent_sample

    from rgt_tui.domain.snapshot import PROCESS_NAME_CHARS, snapshot_from_agent
    from rgt_tui.services.watch.sinks.notify import MAX_BODY

    huge = "B" * 300_000
    proc = {"gpu_index": 0, "pid": 7, "name": huge, "used_mem": 1}
    snap = snapshot_from_agent("box1", agent_sample("box1", gpu_processes=[proc]))
    assert snap.gpu_processes is not None
    (kept,) = snap.gpu_processes
    assert len(kept.name) == PROCESS_NAME_CHARS and kept.name.endswith("…")
    event = WatchEvent("alert", "box1", "alert:box1:gpu.shared", "GPU 0 shared", huge)
    [sent] = await sent_to(tmp_path, event, ["/ok"])
    assert len(sent["message"]) < MAX_BODY + 200, len(sent["message"])
    assert "B" * 100 in sent["message"] and "…" in sent["message"]
