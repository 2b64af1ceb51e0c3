"""Notifications through Apprise: one message per event key, ever, to every target.

A host's targets are ``host.watch.notify`` (the fleet's, then its own): Apprise URLs with
``${VAR}`` where a secret goes. A variable is expanded from the environment each time a
message is sent and the result is handed straight to Apprise — never stored, printed or
logged; a target is named by its scheme and place in the list ("json target 2").

Each target is sent separately, concurrently, so a slow or failing one never holds up
another or the caller: ``on_event`` schedules the sends and returns. A failing target is
retried with backoff (``RETRY_DELAYS``) and reported in ``failures``.

**The sent log** (JSON lines, append-only, in the fleet's journal folder) is what makes
"once" hold across restarts: an ``event`` line when an event is taken on (with the
targets it is meant for), a ``sent`` line each time one target has it. A new Notifier
reads it, so a restart sends nothing again to a target that got a key, and ``resume``
retries the targets that never did (for a day: a week-old "box went silent" helps no
one). Before deciding, a Notifier reads lines other processes appended (the TUI and
``watch`` share the file), so two senders rarely tell a target the same thing twice.

Over 450 lines on purpose: what a message may say (the box's words made inert) and how it
is delivered once (the sent log, retries, resume) are read together by whoever checks
that a box cannot reach a chat through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import apprise

from rgt_tui.domain.config import Fleet
from rgt_tui.domain.text import printable, printable_lines
from rgt_tui.fsutil import append_line
from rgt_tui.services.watch.events import WatchEvent
from rgt_tui.services.watch.sinks import Sink
from rgt_tui.timeouts import within

RETRY_DELAYS = (1.0, 4.0, 16.0)  # seconds before the 2nd, 3rd and 4th try
SEND_TIMEOUT_S = 30.0  # one try; Apprise's own socket timeouts are shorter
RESUME_WINDOW_S = 24 * 3600.0  # older undelivered events are not worth a restart's retry
MAX_FAILURES = 50  # ``failures`` keeps the most recent problems, each once
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]{0,31}")
# Markdown that could plant a link or hide or restyle the box's words, escaped in a
# message (``markdown_inert``): a backslash (so the box cannot escape an escape), the
# brackets of ``[text](url)`` and ``![](url)``, emphasis (``*``), Discord's spoiler and
# tables (``|``), strike (``~``), and code (every backtick). The box's words and ours
# arrive as one text, so two forms of ours are kept as written, to read as meant (ux-b
# #11): a code span that is an rgt-tui command (``rgt-tui teardown box3`` between
# backticks: only letters, digits, spaces and ``._:/=-`` in it, so nothing in it is
# Markdown or a mention), and a ``~`` after a space and before a digit (``at ~21:46``, ``~2m22s``),
# which can open a strike but never close one. A box that writes such a span gets a code
# span of its own plain words, no more. Not ``_``: emphasis only, and cell names and our
# own words (``oom_kill``) are full of it; nor parentheses: without ``[…]`` a ``(url)``
# is a bare URL, shown as what it is.
# Tried in order: the two kept forms first, then what is escaped (group 1); a run of
# backticks is taken whole.
# A third kept form: an ``ssh-keygen -R`` command span (the fix of a refused host key,
# ``tracker._key_refused``): its ``[host]:port`` escaped, the pasted command removed
# nothing (a user's hour); inside a code span no target renders a link.
_MARKDOWN_RE = re.compile(
    r"(?<![^\s(])~(?=\d)|`rgt-tui [A-Za-z0-9 ._:/=-]*`|`ssh-keygen -R [^`\n]*`|(`+|[\\\[\]*|~])"
)
# A mention a chat target acts on: ``@`` and a word (Discord's ``@everyone``/``@here``
# and ``<@id>``, Mattermost's and Rocket.Chat's ``@all``/``@channel``/``@name``,
# Matrix's ``@room``). Every one, wherever it stands: Apprise's Discord target takes any
# ``@word`` it finds (``root@box1`` too) for a ping it adds to the message. A zero-width
# space after the ``@`` keeps the text as it reads and pings no one (``mentions_inert``).
_MENTION_RE = re.compile(r"@(?=\w)")
# What a chat target turns into a link without Markdown (Slack, Discord, Telegram and
# ntfy link a bare ``https://…``; Slack and Telegram a ``www.…`` too): a zero-width space
# after the ``:/`` of ``://`` and after ``www`` keeps it reading the same and unlinked (a
# hostile hour sent a bare phishing URL in a GPU's name, and it arrived clickable).
_LINK_RE = re.compile(r":/(?=/)|\bwww(?=\.)", re.IGNORECASE)
ZERO_WIDTH_SPACE = "\u200b"
_NOTIFY_TYPES = {
    "info": apprise.NotifyType.INFO,
    "warning": apprise.NotifyType.WARNING,
    "critical": apprise.NotifyType.FAILURE,
}


def _quiet_library_logs() -> None:
    """Apprise logs a target's full URL at DEBUG and an unreadable one even at ERROR, and
    urllib3 under it logs each request's path (a Slack or Telegram token is part of
    it): keep their records from reaching any handler the app or a user sets up on the
    root logger. Our own ``failures`` name targets without their URLs instead."""
    for name in ("apprise", "urllib3"):
        logging.getLogger(name).propagate = False


class MissingVariable(Exception):
    """A target's URL names an environment variable that is not set."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


@dataclass(frozen=True)
class Target:
    """One notification URL of a host, as written (``${VAR}`` unexpanded)."""

    host: str
    index: int  # 1-based place in host.watch.notify, for messages
    template: str

    @property
    def id(self) -> str:
        """A stable name for the sent log: a digest of the URL as written, so the log
        holds no URL (one written with a literal token included) and a reordered list
        still matches."""
        return hashlib.sha256(self.template.encode()).hexdigest()[:16]

    @property
    def name(self) -> str:
        """How messages name it ("json target 2") — never by its URL."""
        scheme = self.template.split("://", 1)[0].lower()
        return f"{scheme if _SCHEME.fullmatch(scheme) else 'notify'} target {self.index}"

    def expand(self, environ: Mapping[str, str]) -> str:
        """The URL with each ``${VAR}`` replaced from ``environ``; MissingVariable if unset."""

        def value(match: re.Match[str]) -> str:
            got = environ.get(match.group(1))
            if not got:
                raise MissingVariable(match.group(1))
            return got

        return _VAR.sub(value, self.template)


def targets_of(fleet: Fleet, host: str) -> tuple[Target, ...]:
    """The targets of ``host`` (already the fleet's plus its own, deduplicated); a host
    no longer in the file (its removal is told) gets the fleet's."""
    try:
        urls = fleet.host(host).watch.notify
    except KeyError:
        urls = fleet.watch.notify
    return tuple(Target(host, i, url) for i, url in enumerate(urls, 1))


def target_problems(fleet: Fleet, environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """What is wrong with each host's targets now, said when ``watch`` starts and when the
    fleet file is applied, not at the first event at 3 am (hour s23a #9: a mistyped
    scheme, an unset ``${VAR}``): (target id, words) each. Never the URL itself: it may
    hold a token. A ``[fleet] notify`` target is said once as the fleet's, not once per
    host (hour s34 CLI #8)."""
    problems: dict[str, str] = {}
    where = fleet.path or "the fleet file"
    for host in fleet.hosts:
        for target in targets_of(fleet, host.name):
            whose = f"{host.name}'s {target.name}"
            if target.template in fleet.watch.notify:
                at = Target(
                    host.name, fleet.watch.notify.index(target.template) + 1, target.template
                )
                whose = f"[fleet] notify's {at.name}"
            try:
                url = target.expand(environ)
            except MissingVariable as missing:
                problems[
                    f"{where}: {whose} needs ${missing.name}, which is not set in watch's "
                    "environment — export it before starting watch"
                ] = target.id
                continue
            if apprise.Apprise.instantiate(url, suppress_exceptions=True) is None:
                problems[
                    f"{where}: {whose}: Apprise cannot use this URL — a mistyped URL, or a "
                    "service whose package is missing; check it with: apprise --dry-run -vv "
                    "'URL'"
                ] = target.id
    return [(target_id, words) for words, target_id in problems.items()]


def markdown_inert(text: str) -> str:
    """``text`` with the Markdown that could make a link of it (or hide it) escaped by a
    backslash: ``[x](https://evil)`` reads ``\\[x\\](https://evil)``.

    For every target, not only those Apprise formats as Markdown: the format Apprise
    reports (``notify_format``, ``resolve_format``) is what it sends, not what the service
    renders, and Discord renders Markdown in plain content (sent as TEXT, a box's
    ``[x](https://evil)`` became a link there). A plain target shows the backslash; a
    Markdown one shows the character."""
    return _MARKDOWN_RE.sub(_escaped, text)


def mentions_inert(text: str) -> str:
    """``text`` with each mention a chat target could act on (``@everyone``, ``@here``,
    ``@channel``, ``<@123>``, any ``@word``) broken by a zero-width space after its
    ``@``: it reads the same and notifies no one. Applied after ``printable``, which would show the space as
    an escape (a box's own zero-width space is shown so)."""
    return _MENTION_RE.sub("@" + ZERO_WIDTH_SPACE, text)


def links_inert(text: str) -> str:
    """``text`` with every bare URL's ``://`` and ``www.`` broken by a zero-width space
    (``_LINK_RE``): it reads the same, and no chat target makes a link of it. Applied
    after ``printable``, as ``mentions_inert``."""
    return _LINK_RE.sub(lambda m: m.group() + ZERO_WIDTH_SPACE, text)


def _escaped(match: re.Match[str]) -> str:
    """Each character of a match escaped; the kept forms (group 1 unset) as they are."""
    found = match.group(1)
    return match.group() if found is None else "".join(f"\\{c}" for c in found)


MAX_BODY = 1800  # an event's words in a message: under Discord's 2000 and Telegram's 4096


def message(event: WatchEvent, delayed_from: float | None = None) -> tuple[str, str]:
    """Title and body of the message for ``event``: its own words and where to look;
    ``delayed_from``: when it was first meant to go (a message owed since an earlier run
    of watch), said first. Nothing else goes in — events carry no secrets and this adds
    none."""
    # An event's title often starts with its host already ("box1: the box rebooted",
    # "box3 stopped: …"): named once.
    own = event.title.startswith((f"{event.host}:", f"{event.host} "))
    named = event.title if own else f"{event.host}: {event.title}"
    # The box's words are quoted as plain text: control characters shown as escapes (a
    # desktop notifier or a terminal tailing a webhook's log would act on them), and the
    # body is sent as Apprise's TEXT format (``_send_once``), never as Markdown or HTML.
    # Its Markdown is made inert too (``markdown_inert``): a chat target would render it.
    # (Before ``printable``: its own ``\x1b`` escapes are no Markdown, left as they are.)
    # Its mentions and bare URLs are broken (``mentions_inert``, ``links_inert``, after
    # ``printable``): a mount named ``@everyone`` must not ping a whole channel, nor a
    # GPU's name plant a clickable link.
    title = f"[rgt-tui] {links_inert(mentions_inert(printable(markdown_inert(named), None)))}"
    hint = f"open: rgt-tui (or rgt-tui status {event.host})"
    quoted = links_inert(mentions_inert(printable_lines(markdown_inert(event.body))))
    if len(quoted) > MAX_BODY:
        # A box's text (a GPU process's name) made a 300 KB message, which chat targets
        # refuse whole (Telegram 4096, Discord 2000): the alert was lost (h532 #5).
        quoted = quoted[: MAX_BODY - 1] + "…"
    body = f"{quoted}\n\n{hint}" if event.body else hint
    if delayed_from is not None:
        # Re-sent at a start, maybe hours on: "silent for 5m" read as news while the box
        # had been back for minutes (hour s34 CLI #6).
        at = time.strftime("%Y-%m-%d %H:%M", time.localtime(delayed_from))
        body = f"(delayed: this is from {at}, not delivered then)\n{body}"
    return title, body


@dataclass
class SentLog:
    """The append-only record of events taken on and of targets that got them."""

    path: Path
    events: dict[str, dict[str, Any]] = field(default_factory=dict)  # key → event line
    sent: dict[str, set[str]] = field(default_factory=dict)  # key → target ids
    _offset: int = 0

    def refresh(self) -> None:
        """Read the lines appended since the last read (ours or another process's). A
        torn or foreign line is skipped: the log only ever adds "already sent"."""
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return
        complete = data[: data.rfind(b"\n") + 1]  # a half-written last line waits
        self._offset += len(complete)
        for raw in complete.splitlines():
            try:
                line = json.loads(raw)
                key = line["key"]
            except (ValueError, KeyError, TypeError):
                continue
            if not isinstance(key, str):
                continue
            if isinstance(line.get("event"), dict):
                self.events.setdefault(key, line)
            if isinstance(line.get("target"), str):
                self.sent.setdefault(key, set()).add(line["target"])

    def append(self, line: dict[str, Any]) -> None:
        """Add one line, whole and durable: a "sent" line lost to a crash would mean a
        second message."""
        append_line(self.path, line)


class Notifier(Sink):
    """Sends each WatchEvent once to each of its host's targets (a ``watch`` sink)."""

    def __init__(
        self,
        fleet: Fleet,
        sent_log: Path,
        *,
        clock: Callable[[], float] = time.time,
        retry_delays: tuple[float, ...] = RETRY_DELAYS,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        environ: Mapping[str, str] = os.environ,
        send_timeout: float = SEND_TIMEOUT_S,
        report: Callable[[str], None] | None = None,
    ) -> None:
        _quiet_library_logs()
        self.fleet = fleet
        self.failures: list[str] = []  # recent delivery problems, oldest first
        # Targets that cannot be used, found before any event (a mistyped URL, a variable
        # not set): no delivery failed yet (h602 #5: "not every notification was
        # delivered" after 0 events); an event one misses is then a failure too.
        self.unusable: list[str] = []
        # Said as each problem happens (watch's console): a dead target was said only
        # when watch exited, and an overnight watch looked healthy (hour s18a #3).
        self._say = report
        self._log = SentLog(sent_log)
        self._log.refresh()
        self._clock = clock
        self._delays = retry_delays
        self._sleep = sleep
        self._environ = environ
        self._send_timeout = send_timeout
        self._busy: set[tuple[str, str]] = set()  # (key, target id) being sent or given up
        self._tasks: set[asyncio.Task[None]] = set()
        self._resumed = False
        # Hosts the fleet file dropped -> their targets before: their removal ("… still
        # bills") goes where their news went, not to the new file's (s37 fleet hour #4).
        self._gone: dict[str, tuple[Target, ...]] = {}
        self._said_unusable: set[str] = set()  # targets said unusable since the file was read
        self._check_targets()

    async def on_event(self, event: WatchEvent) -> None:
        """Schedule ``event`` for each target that has not had its key; returns at once.
        Never raises: a problem lands in ``failures``."""
        try:
            if not self._resumed:
                await self.resume()
            await asyncio.to_thread(self._log.refresh)
            targets = self._targets(event.host)
            if event.key not in self._log.events and targets:
                line = {"key": event.key, "time": self._clock(), "event": asdict(event)}
                line["targets"] = [t.id for t in targets]
                await asyncio.to_thread(self._log.append, line)
                self._log.events[event.key] = line
            self._schedule(event, targets)
        except Exception as e:  # noqa: BLE001 — a sink must never stop the watch
            self._report(f"notifications for {event.host}: {type(e).__name__}: {e}")

    def on_fleet(self, fleet: Fleet) -> None:
        """The fleet file changed: a host added while watch runs (``rgt-tui add``) is
        told from now on, and a ``notify`` list changed goes to its new targets; a host
        removed keeps its targets for the news of its removal."""
        names = {h.name for h in fleet.hosts}
        for host in self.fleet.hosts:
            if host.name not in names:
                self._gone[host.name] = targets_of(self.fleet, host.name)
        for name in names:
            self._gone.pop(name, None)
        self.fleet = fleet
        self._check_targets()

    def reaches(self, host: str) -> bool:
        """Whether some target of ``host`` can be sent to, as the fleet file was last
        applied (a host whose only URL is mistyped has none)."""
        return any(t.id not in self._unusable_ids for t in self._targets(host))

    def _targets(self, host: str) -> tuple[Target, ...]:
        """``host``'s targets: the fleet's, or, for a host the file dropped, its own then."""
        gone = self._gone.get(host)
        return gone if gone is not None else targets_of(self.fleet, host)

    def _check_targets(self) -> None:
        """Say each target that cannot be sent to (``target_problems``); each is said
        again now (the file was applied), and not again at each event it misses."""
        self._said_unusable.clear()
        self.unusable = []
        self._unusable_ids: set[str] = set()
        for target_id, problem in target_problems(self.fleet, self._environ):
            self.unusable.append(problem)
            self._said_unusable.add(target_id)
            self._unusable_ids.add(target_id)
            if self._say is not None:
                self._say(problem)

    async def resume(self) -> int:
        """Retry, once per start, the events of the last day that some target never got
        (it failed, or the process stopped first); returns how many sends were scheduled.
        ``on_event`` calls it the first time; ``watch`` may call it at start."""
        self._resumed = True
        await asyncio.to_thread(self._log.refresh)
        scheduled = 0
        oldest = self._clock() - RESUME_WINDOW_S
        for key, line in list(self._log.events.items()):
            try:
                event = WatchEvent(**line["event"])
                meant = set(line.get("targets") or ())
                if float(line["time"]) < oldest or event.key != key:
                    continue
                targets = [t for t in self._targets(event.host) if t.id in meant]
            except (KeyError, TypeError, ValueError):
                continue  # a host no longer in the fleet, or a line from another version
            scheduled += self._schedule(event, targets, float(line["time"]))
        return scheduled

    def _schedule(self, event: WatchEvent, targets: Any, owed_since: float | None = None) -> int:
        """Start one send task per target still owed ``event``."""
        done = self._log.sent.get(event.key, set())
        count = 0
        for target in targets:
            slot = (event.key, target.id)
            if target.id in done or slot in self._busy:
                continue
            self._busy.add(slot)
            task = asyncio.create_task(self._deliver(event, target, owed_since))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            count += 1
        return count

    async def _deliver(
        self, event: WatchEvent, target: Target, owed_since: float | None = None
    ) -> None:
        """Send ``event`` to ``target``, retrying with backoff; record a success. A target
        that fails every try stays owed (busy, so this process does not hammer it) and
        ``resume`` retries it at the next start."""
        try:
            await self._try_all(event, target, owed_since)
        except asyncio.CancelledError:
            # watch ended first (``aclose``'s grace): said, or `watch --once` exited 0
            # over a notification that never went, and cron saw success (h562 #5).
            self._report(
                f"{target.name} of {target.host}: '{event.title}' not delivered before watch "
                "ended (the target was slow or down); it is retried when watch next starts"
            )
            raise
        except Exception as e:  # noqa: BLE001 — a task's error must not vanish unreported
            self._report(f"{target.name} of {target.host}: {type(e).__name__}")

    async def _try_all(
        self, event: WatchEvent, target: Target, owed_since: float | None = None
    ) -> None:
        """The tries of ``_deliver``."""
        title, body = message(event, owed_since)
        kind = _NOTIFY_TYPES.get(event.severity, apprise.NotifyType.INFO)
        tries = 1 + len(self._delays)
        for attempt in range(tries):
            if attempt:
                await self._sleep(self._delays[attempt - 1])
            try:
                url = target.expand(self._environ)
            except MissingVariable as missing:
                self._report(
                    f"notify target {target.index} of {target.host} needs ${missing.name} (not set)",
                    once=target.id,
                )
                return
            plugin = apprise.Apprise.instantiate(url, suppress_exceptions=True)
            if plugin is None:
                self._report(
                    f"{target.name} of {target.host}: Apprise cannot use this URL — a "
                    "mistyped URL, or a service whose package is missing (dbus:// needs "
                    "dbus-python); check it with: apprise --dry-run -vv 'URL'",
                    once=target.id,
                )
                return
            if await self._send_once(plugin, title, body, kind):
                await self._record(event, target)
                return
        self._report(
            f"{target.name} of {target.host}: '{event.title}' not delivered after {tries} "
            "tries; it is retried when watch next starts"
        )

    async def _send_once(self, plugin: Any, title: str, body: str, kind: Any) -> bool:
        """One try through Apprise's public API; False for any failure. Apprise's own
        error text is not kept: it may quote the expanded URL."""
        sender = apprise.Apprise()
        sender.add(plugin)
        try:
            result = await within(
                sender.async_notify(
                    body=body, title=title, notify_type=kind, body_format=apprise.NotifyFormat.TEXT
                ),
                self._send_timeout,
            )
        except Exception:  # noqa: BLE001 — a plugin's error is a failed try, like a 500
            return False
        return bool(result)

    async def _record(self, event: WatchEvent, target: Target) -> None:
        """Note in the sent log that ``target`` has ``event.key``."""
        line = {"key": event.key, "time": self._clock(), "target": target.id}
        line["name"] = f"{target.name} of {target.host}"
        try:
            await asyncio.to_thread(self._log.append, line)
        except OSError as e:
            self._report(f"sent log {self._log.path}: {e.strerror or e} — a restart may repeat")
        self._log.sent.setdefault(event.key, set()).add(target.id)

    def _report(self, text: str, *, once: str | None = None) -> None:
        """Keep ``text`` as the most recent problem (once; the oldest drop off), and say
        it — only the first time for a target that cannot be used (``once``: its id),
        which every event would otherwise say again, per host."""
        with contextlib.suppress(ValueError):
            self.failures.remove(text)
        self.failures.append(text)
        del self.failures[:-MAX_FAILURES]
        if once is not None:
            if once in self._said_unusable:
                return
            self._said_unusable.add(once)
        if self._say is not None:
            self._say(text)

    async def drain(self) -> None:
        """Wait for every scheduled send, retries included (tests; a patient shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def aclose(self, grace: float = 10.0) -> None:
        """Shutdown: give sends ``grace`` seconds, then cancel the rest — they stay owed
        in the sent log, and ``resume`` retries them at the next start."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=grace)
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
