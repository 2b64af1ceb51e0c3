"""What preflight and a code sync say, as styled text: the plan dialog and the Queue tab.

Pure functions of a ``PreflightReport`` and of a sync's progress and outcome; the same
wording as ``rgt-tui preflight`` / ``rgt-tui sync`` and the CLI launch plan, so a screen
and its command say the same thing.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from textual.content import Content

from rgt_tui.content.box_text import shown
from rgt_tui.content.key_words import in_keys
from rgt_tui.domain.units import fmt_bytes, plural
from rgt_tui.services.code_sync.types import secrets_note, skipped_note, withheld_note

if TYPE_CHECKING:
    from rgt_tui.controllers.jobs import HostJobs
    from rgt_tui.services.code_sync import SyncResult
    from rgt_tui.services.preflight import PreflightReport

MUTED = "$foreground-muted"


def preflight_lines(
    report: PreflightReport,
    acked: Iterable[str] = (),
    *,
    keys: Literal["screen", "dialog", "commands"] = "screen",
) -> list[Content]:
    """The report's note (why some checks were not run), the passed checks on one line,
    then each failed check with its detail and fix; a failed check in ``acked`` is marked
    acknowledged (a warning, not a refusal). ``keys``: where the lines are read — the
    host's screen (its fix said as its key, ``y (sync)``), a dialog over it (``Esc, then
    y (sync)``), or a screen whose keys are another host's (the command as written)."""
    acked = set(acked)
    passed = [c for c in report.checks if c.ok and c.ran]
    lines: list[Content] = []
    if report.note:  # why some checks were not run (a Slurm login node), as the CLI says
        lines.append(Content.styled(report.note, MUTED))
    if passed:
        lines.append(
            Content.assemble(
                ("passed ", MUTED), (" ".join(f"✓ {c.name}" for c in passed), "$success")
            )
        )
    for c in report.checks:
        if not c.ran:  # neither passed nor failed: said as such
            lines.append(Content.assemble((f"- {c.name} ", MUTED), shown(c.detail, lines=True)))
            continue
        if c.ok:
            continue
        if c.name in acked:
            lines.append(
                Content.assemble(
                    (f"⚠ {c.name}", "bold $warning"),
                    (" acknowledged: ", "$warning"),
                    shown(c.detail, lines=True),
                )
            )
        else:
            lines.append(
                Content.assemble(
                    (f"✖ {c.name}", "bold $error"),
                    (" failed: ", "$error"),
                    shown(c.detail, lines=True),
                )
            )
            if c.fix:  # in this screen's keys: "y (sync)", not "rgt-tui sync box1"
                fix = (
                    c.fix
                    if keys == "commands"
                    else in_keys(c.fix, report.host, in_dialog=keys == "dialog")
                )
                lines.append(Content.assemble(("    fix: ", MUTED), shown(fix, lines=True)))
    if report.code is not None:
        lines.append(Content.assemble(("code ", MUTED), shown(report.code.short())))
    if not lines:
        lines.append(Content.styled("no checks ran", MUTED))
    return lines


def preflight_summary(report: PreflightReport, acked: Iterable[str] = ()) -> Content:
    """One line: ``preflight on box1: 8 passed, 1 failed (gpu)``."""
    failed = report.unacknowledged(acked)
    passed = sum(1 for c in report.checks if c.ok and c.ran)
    head = Content.assemble(("preflight on ", "bold"), (report.host, "bold $accent"), ": ")
    if not failed:
        acked_n = sum(1 for c in report.checks if not c.ok)
        not_run = sum(1 for c in report.checks if not c.ran)
        tail = (f", {acked_n} acknowledged" if acked_n else "") + (
            f", {not_run} not run" if not_run else ""
        )
        if report.queue_problems:  # the box is ready; the queue file is not (ux-h #16)
            return head + Content.assemble(
                f"{passed} passed{tail}, but ",
                (
                    # Each line below says whose it is (the queue file's, a credential's):
                    # a fixed "(the queue file's, the credentials')" named both for one
                    # (hour s22a #9).
                    f"a launch refuses the {plural(len(report.queue_problems), 'problem')} below",
                    "bold $error",
                ),
            )
        return head + Content.styled(f"{passed} passed{tail}: ready to launch", "$success")
    names = ", ".join(c.name for c in failed)
    return head + Content.assemble(
        f"{passed} passed, ", (f"{len(failed)} failed ({names})", "bold $error")
    )


def sync_progress_line(done: int, total: int, path: str) -> Content:
    """``syncing 1.2 MB / 3.4 MB (35%) · src/model.py``."""
    pct = f" ({100 * done // total}%)" if total else ""
    return Content.assemble(
        ("syncing ", "bold $accent"),
        f"{fmt_bytes(done)} / {fmt_bytes(total)}{pct}",
        (f" · {shown(path)}" if path else "", MUTED),
    )


def sync_result_lines(result: SyncResult, host: str, *, now: float | None = None) -> list[Content]:
    """What a finished sync sent, removed, overwrote, left and held back, when it ended,
    and the identity the box's tree now has (checked by hash): what ``rgt-tui sync``
    prints. No ✓ while files left on the box keep its tree different from the local one."""
    when = Content.styled(f" · {_clock(result.finished, now)}", MUTED)
    if result.files_sent:
        what = (
            f"synced {plural(result.files_sent, 'file')}, {fmt_bytes(result.bytes_sent)} "
            f"to {host} by {result.method}"
        )
    elif result.removed or result.left:
        what = f"nothing to send to {host} ({plural(result.files_total, 'file')} already there)"
    else:
        what = f"{host} already holds the tree ({plural(result.files_total, 'file')})"
    if result.box_differs:
        lines = [
            Content.assemble(("⚠ ", "bold $warning"), (what, "bold $warning"), when),
            Content.assemble(
                ("  ", MUTED),
                (result.still_differs_note(host), "$warning"),
                ("; the box's tree: ", MUTED),
                shown(result.identity.short()),
            ),
        ]
    else:
        lines = [
            Content.assemble(("✓ ", "bold $success"), (what, "bold $success"), when),
            # As of that sync (its time above): a later edit here is not seen (s21b #5).
            Content.assemble(
                ("  the box's tree after this screen's sync: ", MUTED),
                shown(result.identity.short()),
            ),
        ]
    if result.removed:
        lines.append(
            Content.assemble(
                (
                    f"  removed on {host} (an earlier sync put them there; the tree dropped them): ",
                    MUTED,
                ),
                shown(_some(result.removed)),
            )
        )
    if result.overwritten or result.replaced_found:
        lines.append(Content.assemble(("  ", MUTED), (result.overwritten_note(), "$warning")))
    if result.left:
        lines.append(
            Content.assemble(
                (f"  left on {host}, not in the tree (remove by hand, or code_exclude): ", MUTED),
                shown(_some(result.left)),
            )
        )
    if result.excluded:  # as the command line says it (review h514 #12)
        lines.append(
            Content.assemble(
                (f"  kept on {host}, as the rules now leave them out (never removed): ", MUTED),
                shown(_some(result.excluded)),
            )
        )
    if result.skipped:
        lines.append(
            Content.assemble(("  ", MUTED), (shown(skipped_note(result.skipped)), "$warning"))
        )
    if result.withheld:
        lines.append(Content.assemble(("  ", MUTED), shown(withheld_note(result.withheld))))
    if result.secrets or result.secrets_left:
        lines.append(
            Content.assemble(
                ("  ", MUTED), shown(secrets_note(result.secrets, result.secrets_left))
            )
        )
    return lines


def _clock(at: float, now: float | None = None) -> str:
    """When a result was made: ``14:02:11`` today, ``2024-05-01 14:02`` another day (an
    old result must not read as current)."""
    then = datetime.fromtimestamp(at)
    today = datetime.fromtimestamp(time.time() if now is None else now).date()
    return then.strftime("%H:%M:%S") if then.date() == today else then.strftime("%Y-%m-%d %H:%M")


def _some(paths: tuple[str, ...], named: int = 5) -> str:
    """The first ``named`` paths, and how many more."""
    more = len(paths) - named
    return ", ".join(paths[:named]) + (f" and {more} more" if more > 0 else "")


def failure_lines(
    what: str, message: str, fix: str = "", at: float | None = None, host: str = ""
) -> list[Content]:
    """``✖ sync failed: … · 14:02:11`` and its fix (the time: an old failure read as the
    box's state now, minutes after the queue it named had stopped: a user's hour), in
    ``host``'s keys."""
    # Whose try: a sync run from another terminal since is not seen here, and the old
    # failure read as the box's state (hour s20b #7).
    when = (
        Content.styled(f" · {_clock(at)} (this screen's last try)", MUTED)
        if at is not None
        else Content("")
    )
    lines = [
        Content.assemble((f"✖ {what} failed: ", "bold $error"), shown(message, lines=True)) + when
    ]
    if fix:
        lines.append(Content.assemble(("  fix: ", MUTED), shown(in_keys(fix, host), lines=True)))
    return lines


def ready_lines(state: HostJobs, acked: Iterable[str] = ()) -> list[Content]:
    """The Queue tab's section for ``y`` and ``P``: the sync's progress or outcome, then
    the preflight's (nothing before either ran in this session)."""
    lines: list[Content] = []
    if state.running == "sync":
        lines.append(Content.styled("syncing the code…", "bold $accent"))
        if state.sync_progress is not None:
            lines.append(sync_progress_line(*state.sync_progress))
    if state.sync_error is not None:
        lines += failure_lines("sync", *state.sync_error, at=state.sync_error_at, host=state.host)
    if state.sync_result is not None:
        lines += sync_result_lines(state.sync_result, state.host)
    if state.running == "preflight":
        lines.append(Content.styled("running preflight on the box…", "bold $accent"))
    if state.preflight_error is not None:
        lines += failure_lines(
            "preflight", *state.preflight_error, at=state.preflight_error_at, host=state.host
        )
    if state.preflight is not None:
        report = state.preflight
        # The fleet file's preflight_ack, as the CLI and the launch plan read it.
        lines.append(preflight_summary(report, acked))
        lines += preflight_lines(report, acked)
        lines += [
            # A credential this machine cannot read ("cannot read …", launch_checks).
            Content.assemble(
                (
                    "credential  " if problem.startswith("cannot read ") else "queue file  ",
                    "bold $error",
                ),
                shown(problem),
            )  # fmt: skip
            for problem in report.queue_problems
        ]
    if lines:
        lines.insert(0, Content.styled("Readiness (y sync · P preflight)", "bold"))
    return lines
