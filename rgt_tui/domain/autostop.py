"""The rules of the opt-in autostop (issue 31), pure: when a host's stop may never run,
whether its queue has finished, whether its GPUs idle now, and how long they have idled.

``services.watch.drivers.autostop`` adds what needs the box, the journal and the clock: the teardown
gate's own conditions re-checked at that moment, the stop run at most once per queue.

Two guards stand in front of a host's ``stop`` command, each enough on its own:

- the profile's rule (``Profile.reversible_stop``, from reference/platforms.md): a
  platform whose only verb destroys (Lambda: terminate), or that has no stop at all (a
  bare SSH box, Slurm, a pod), never has its stop run;
- a heuristic beside it: a command that is the host's ``teardown`` command, or holds a
  word of destroying (``destroy``, ``terminate``, ``delete``, ``release``, ``rm``…), is
  refused whatever the profile says — a user who pastes the wrong line into ``stop``
  must not lose a box to it. The command is read with the shell's rules first (it runs
  under ``sh``), so quoting cannot hide a word (``dest''roy``, ``des\troy``,
  ``"destroy"``); a command those rules cannot read (a quote left open) is refused,
  and so is ANSI-C ``$'…'`` quoting, whose escapes can spell any word. Expansions
  (``$(…)``, variables) are not evaluated: their text is scanned as written.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from rgt_tui.domain.box_watch import NO_DEVICE
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.profiles import Profile
from rgt_tui.domain.queue_state import (
    FINISHED,
    PENDING,
    RETRY,
    RUNNING,
    USER_STOPPED,
    QueueView,
    queue_is,
)
from rgt_tui.domain.snapshot import HostSnapshot
from rgt_tui.domain.text import printable

# Words of destroying, matched as whole words of the command (``shutdown`` is not
# ``down``): the verbs of the providers' destroy commands (reference/platforms.md: vast.ai
# destroy, RunPod terminate / remove / delete, Lambda terminate, SkyPilot down) and the
# shell's. A stop command never needs one. The one list: the profiles name their verb in
# prose (``teardown_verb``), and a test keeps each of those verbs in this list.
DESTROY_WORDS = (
    "destroy", "terminate", "delete", "release", "rm", "rmdir", "remove", "down", "purge",
    "teardown", "wipe", "shred", "unlink", "truncate",
)  # fmt: skip
# The same in the Chinese platforms' consoles and CLIs (释放 release, 删除 delete, 归还
# return the instance, 销毁 destroy): matched anywhere in the command.
DESTROY_WORDS_CJK = ("释放", "删除", "归还", "销毁")
_WORD = re.compile(r"[a-z0-9]+")

# A gap this long between two idle samples (watch stopped, the box unreachable, the
# laptop asleep) restarts the idle clock: idle for N minutes means seen idle throughout.
MAX_SAMPLE_GAP_S = 300.0


def shell_words(command: str) -> list[str]:
    """``command``'s words as ``sh`` reads them: quotes and backslashes undone, ``;``,
    ``&&``, ``|`` and parentheses words of their own, a backslash-newline joining two
    lines. ValueError when a quote is left open. ``#`` is kept (no comment is dropped)."""
    lexer = shlex.shlex(command.replace("\\\n", ""), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def destroy_word(command: str) -> str | None:
    """The first word of destroying in ``command`` as written or as the shell reads it
    (None: none)."""
    texts = [command]
    try:
        texts += shell_words(command)
    except ValueError:  # config_refusal refuses it for that; the text as written still counts
        pass
    words = {w for text in texts for w in _WORD.findall(text.lower())}
    found = next((w for w in DESTROY_WORDS if w in words), None)
    return found or next((w for w in DESTROY_WORDS_CJK if any(w in t for t in texts)), None)


def config_refusal(
    host: HostConfig, profile: Profile, reversible: Sequence[str] = ()
) -> str | None:
    """Why ``watch`` must never run ``host``'s stop on its own (None: it may, once every
    condition holds), naming the host's ``[[hosts]]`` block, where the fix goes (hour
    s23a #9). ``reversible``: the profiles that have a reversible stop, named in the fix.
    The command's text is not repeated: it may hold a token."""
    why = _config_refusal(host, profile, reversible)
    if why is None or not host.line or "block at line" in why:
        return why
    return f"{why} (the [[hosts]] block at line {host.line})"


def _config_refusal(host: HostConfig, profile: Profile, reversible: Sequence[str]) -> str | None:
    stop = (host.watch.stop or "").strip()
    where = f"{host.name}: autostop refused"
    example = f', e.g. stop = "{profile.stop_example}"' if profile.stop_example else ""
    if not stop:
        return (
            f"{where} — autostop_minutes needs stop = \"<the provider's reversible stop "
            f'command>"{example}'
        )
    if not profile.reversible_stop:
        others = f" (one of: {', '.join(reversible)})" if reversible else ""
        return (
            f"{where} — profile {profile.name} ({profile.title}) has no reversible stop: "
            f"{profile.teardown_verb}; after a stop: {profile.stop_survives}. watch never "
            f"runs a stop there. Remove autostop_minutes, or set profile to the box's "
            f"platform if it has a stop that can be undone{others}"
        )
    try:
        words = shell_words(stop)
    except ValueError as exc:  # e.g. "No closing quotation": the shell would not run it
        block = f" (the [[hosts]] block at line {host.line})" if host.line else ""
        return (
            f"{where} — stop = … cannot be read as a shell command{block}: "
            f"{str(exc).lower()}. Close the quote, so the destroy-word guard reads what sh "
            "would run"
        )
    teardown = " ".join((host.teardown or "").split())
    if teardown and (" ".join(stop.split()) == teardown or words == _words_or_none(teardown)):
        return (
            f"{where} — stop is the host's teardown command: a stop must be the provider's "
            "reversible stop (the box starts again with its disk), never its destroy"
        )
    word = destroy_word(stop)
    if word is not None:
        return (
            f"{where} — stop contains '{word}', a word of destroying (a guard beside the "
            f"profile's rule: watch never runs anything that may destroy). Write the "
            f"provider's reversible stop{example}"
        )
    if "$'" in stop:
        return (
            f"{where} — stop uses $'…' quoting, whose escapes can spell any word (a "
            "destroy too): write the command's words plainly"
        )
    return None


def _words_or_none(command: str) -> list[str] | None:
    try:
        return shell_words(command)
    except ValueError:
        return None


def queue_refusal(view: QueueView | None) -> str | None:
    """Why the queue does not count as finished (None: launched, its done record written,
    and no cell running, pending or queued for a retry)."""
    if view is None:
        return "the queue has not been read (no queue, or the box not reached yet)"
    if view.launch is None:
        return "no queue was launched on this box"
    waiting = [c.name for c in view.cells if c.status in (RUNNING, PENDING, RETRY)]
    if view.state != FINISHED or view.launch.done is None:
        running = [c.name for c in view.cells if c.status == RUNNING]
        now = f" (running: {', '.join(running[:3])})" if running else ""
        if view.state == USER_STOPPED:
            # What settles it, beside GEN1's "queue finished … still bills" (s37 money
            # hour #6: the two read as contradicting each other, with no way on).
            return (
                f"{queue_is(view.state)}, not finished: autostop stops a box only once its "
                "queue ran to its end — relaunch the rest (L, rgt-tui launch), or pull, "
                "verify and stop or tear the box down yourself"
            )
        return f"{queue_is(view.state)}, not finished{now}"
    if waiting:
        return f"cells still to run: {', '.join(waiting[:3])}"
    return None


UNKNOWN_GPUS = "cannot tell whether the GPUs are idle"
NO_SAMPLE = "no sample from the box now"


def idle_refusal(
    snapshot: HostSnapshot | None, connection: str, idle_util_pct: float
) -> str | None:
    """Why the GPUs do not count as idle in this sample (None: every GPU under
    ``idle_util_pct`` and no queue cell running), as the health rules' idle clock says.
    A box that cannot be sampled now is not known to idle."""
    if connection == "connected" and snapshot is None:
        return f"{NO_SAMPLE} (connected; its first sample has not come yet)"
    if connection != "connected" or snapshot is None:
        return f"{NO_SAMPLE} (connection {connection})"
    if snapshot.cell is not None:
        return f"cell {snapshot.cell} runs"
    if not snapshot.gpus:
        if snapshot.gpu_unavailable_reason == NO_DEVICE:
            return None  # a CPU box: no GPU to idle, and no cell runs (hour s20b #4)
        # nvidia-smi missing or broken: whether a GPU is busy is unknown, and "not idle"
        # read false of a box that billed on while its driver tools were gone.
        why = printable(snapshot.gpu_unavailable_reason or "no GPU readings", 200)
        return (
            f"{UNKNOWN_GPUS}: {why} — autostop stops only a box it sees idle; make "
            "nvidia-smi work there, or stop the box yourself"
        )
    busy = [
        f"GPU {g.index} at {'?' if g.util_pct is None else f'{g.util_pct:g}'} %"
        for g in snapshot.gpus
        if g.util_pct is None or g.util_pct >= idle_util_pct
    ]
    return f"{', '.join(busy[:3])} (idle under {idle_util_pct:g} %)" if busy else None


@dataclass
class IdleClock:
    """Since when a host's GPUs have been seen idle without a break (``since``), and the
    last idle sample (``seen``); a busy sample, or a gap of ``MAX_SAMPLE_GAP_S`` between
    idle ones, restarts it."""

    since: float | None = None
    seen: float | None = None

    def observe(self, idle: bool, now: float) -> bool:
        """One sample; True when ``since`` changed (worth keeping at once)."""
        if not idle:
            changed = self.since is not None
            self.since = self.seen = None
            return changed
        if self.since is None or self.seen is None or now - self.seen > MAX_SAMPLE_GAP_S:
            self.since = self.seen = now
            return True
        self.seen = now
        return False

    def idle_for(self, now: float) -> float:
        """Seconds idle without a break, as of ``now`` (0 when not idle)."""
        return 0.0 if self.since is None else max(0.0, now - self.since)
