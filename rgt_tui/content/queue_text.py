"""What a queue view says, as lines of styled text: shared by the fleet pane and the tab.

Pure functions of a ``QueueView``; no widget state.
"""

from __future__ import annotations

from textual.content import Content

from rgt_tui.content.box_text import shown
from rgt_tui.content.host_text import at_risk_lines, clock_hhmm
from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.preemption import Checkpoint
from rgt_tui.domain.queue_state import (
    DONE,
    FAILED,
    FINISHED,
    GROUP_STOPPED,
    INTERRUPTED,
    KILLED,
    PENDING,
    SKIPPED,
    SLURM_ENDED,
    STOPPED,
    USER_STOPPED,
    CellView,
    QueueView,
    code_brief,
    relaunch_start,
)
from rgt_tui.domain.snapshot import HostSnapshot
from rgt_tui.domain.text import pad
from rgt_tui.domain.units import local_time, plural

# The queue-control keys (screens/queue_keys.py), said under the summary; S and X only
# while a cell runs (they have nothing to act on otherwise).
RETRY_HINT = " · R retry or resume a cell"  # said only with a cell R can take
STOP_HINT = "S stop after this cell · "  # not once a stop was asked (``control_hint``)
CONTROL_HINT = STOP_HINT + "X kill the running cell" + RETRY_HINT
IDLE_HINT = "nothing runs" + RETRY_HINT


def control_hint(view: QueueView) -> str:
    """The keys under a running queue's summary: S only while no stop was asked (h471 #8:
    "S stop after this cell" stayed after S; the line above says the stop was asked),
    R only with a cell it can take."""
    # Nor R once a stop was asked: the retry is refused until the queue ends (h535 #7).
    retry = view.retry_pickable and not view.stop_requested
    hint = CONTROL_HINT if retry else CONTROL_HINT.removesuffix(RETRY_HINT)
    return hint.removeprefix(STOP_HINT) if view.stop_requested else hint


# A cell row's duration column: "≥59m59s", as wide as any under 100 days ("≥99d23h").
RAN_WIDTH = 7


# With a cell that ended before its end (failed, killed, interrupted, a scheduler's end):
# a relaunch from it (L) leaves its {out} in place, so its run resumes from its latest
# checkpoint, and runs every cell after it; R sets {out} aside and starts it over, or
# (Resume) keeps it and runs that cell alone — on a box and a group alike (ux-h #13: R
# alone was offered for a killed group cell that L resumed).
def launch_start(view: QueueView) -> int:
    """Where L's plan starts (``launch.default_start``), with the local file's cells not
    sent yet counted as the plan counts them: the box's cells alone made the hint say
    "L relaunch from cell 1" over a plan that started at the first new line, 6 (both s43
    hours)."""
    unsent = view.not_sent.cells if view.not_sent is not None else ()
    cells = (*view.cells, *(CellView(i, c.name, PENDING) for i, c in unsent))
    return relaunch_start(view.resume_index, cells)


def ended_hint(view: QueueView) -> str:
    """``nothing runs · R retry or resume a cell · L relaunch from cell 1 (reruns
    fit from its checkpoint, if any)``: with where L's plan starts. A cell the user killed and stopped at is
    behind it (the plan starts after it: a user's hour read "L relaunch from it" and got
    the next cell), so the hint says which start resumes it."""
    first = min((c for c in view.cells if c.status in ENDED), key=lambda c: c.index)
    start = launch_start(view)
    name = shown(first.name)
    # "from its checkpoint, if any": a relaunch keeps {out}, but a cell that never wrote a
    # checkpoint there starts over (a user's hour read "resumes" on a cell with no output).
    # The done cells after it run again on a relaunch from it (a user's hour: left out).
    done = [c.index for c in view.cells if c.index > first.index and c.status == DONE]
    again = ""
    if done:
        listed = ", ".join(map(str, done[:4])) + (", …" if len(done) > 4 else "")
        one = len(done) == 1
        again = f"; done {'cell' if one else 'cells'} {listed} after it run{'s' if one else ''} again too"
    if first.index < start:
        how = f"L relaunch from cell {start} (start at {first.index} to rerun {name} from its checkpoint, if any{again})"
    else:
        how = f"L relaunch from cell {start} (reruns {name} from its checkpoint, if any{again})"
    # With done cells after it, R's Resume is the way on from its checkpoint that runs
    # nothing twice (s43: L was the only one said).
    r = f"R retry or resume {name} (alone)" if done else "R retry or resume a cell"
    return f"nothing runs · {r} · {how}"


ENDED = (FAILED, KILLED, INTERRUPTED, *SLURM_ENDED)


def idle_hint(view: QueueView) -> str:
    """``nothing runs · 2 cells not run: L starts from cell 3 · R retry a cell``: cells
    left pending by a stop are said as the pane says them (s37 dev-loop #12: the tab read
    "nothing runs · R retry or resume a cell" beside the pane's "1 not run: L starts")."""
    # R only with a cell it can take (h461 #3: offered beside three pending cells, then
    # "no failed, killed or finished cell to retry").
    retry = RETRY_HINT if view.retry_pickable else ""
    pending = [c for c in view.cells if c.status == PENDING]
    if not pending or view.runner_alive:
        return "nothing runs" + retry
    start = launch_start(view)
    return (
        f"nothing runs · {plural(len(pending), 'cell')} not run: L starts from cell {start}" + retry
    )


STATUS_STYLE = {
    "pending": "$foreground-muted",
    "running": "bold $accent",
    "done": "$success",
    "failed": "bold $error",
    "interrupted": "bold $warning",
    "killed": "bold $error",
    "retry": "bold $accent",
    "skipped": "$foreground-muted",
    # Slurm's terminal states (issue 32): ended by the scheduler, not by the command.
    "OUT_OF_MEMORY": "bold $error",
    "TIMEOUT": "bold $warning",
    "PREEMPTED": "bold $warning",
    "NODE_FAIL": "bold $warning",
    "CANCELLED": "bold $error",
}
STATUS_MARK = {
    "pending": "·", "running": "▶", "done": "✓", "failed": "✖", "interrupted": "!",
    "killed": "✖", "retry": "↻", "skipped": "→", "OUT_OF_MEMORY": "✖", "TIMEOUT": "⏱",
    "PREEMPTED": "!", "NODE_FAIL": "!", "CANCELLED": "✖",
}  # fmt: skip


def cluster_text(view: QueueView) -> str:
    """A Slurm host's cluster side in one line: the user's jobs by state, the
    partitions' idle/allocated nodes, where ended states come from, and why GPU
    telemetry is not shown ('' on any other host)."""
    return shown(view.cluster.line()) if view.cluster is not None else ""


def slurm_counts(view: QueueView) -> str:
    """`` · 2 running · 1 pending · 1 OUT_OF_MEMORY`` (a Slurm queue: counts per state)."""
    parts = [f"{view.count(s)} {s}" for s in ("running", "pending") if view.count(s)]
    parts += [f"{view.count(s)} {s}" for s in ("interrupted", *SLURM_ENDED) if view.count(s)]
    return "".join(f" · {p}" for p in parts)


def queue_pane_line(view: QueueView, *, torn_down: bool = False) -> Content | None:
    """``queue 2/5 done · 1 failed · 1 killed · 1 to retry · cell_b for 1m02s · elapsed
    5m10s`` for the fleet pane (the running cell's own time, then the queue's since its
    launch, as the Queue tab names them: ux-g #7); None before any deploy.

    With a failed cell, a second line says why: the last line its command printed
    (``✖ box1_wide: ModuleNotFoundError: No module named 'torch'``), so a cell that
    cannot start says so on the pane, not only in its log. ``torn_down``: no launch is
    offered (L is refused there: h581 #10), nor a runner gone (d cannot ask: h585 #3).
    """
    if not view.cells:
        return None
    done = view.count("done")
    parts: list[str | tuple[str, str]] = [
        ("queue ", "$foreground-muted"),
        (f"{done}/{view.total} done", "$success" if done == view.total else "bold"),
    ]
    # Every cell that needs the user, on any backend: a killed cell and one queued for
    # a retry (a Slurm retry may wait in the scheduler) are neither done nor failed.
    if view.count(FAILED):
        parts.append((f" · {view.count(FAILED)} failed", "bold $error"))
    for count, word in view.waiting_counts():
        parts.append((f" · {count} {word}", "bold $error" if word == "killed" else "bold $accent"))
    # Moved or skipped cells run elsewhere or never: counted as ``queue show`` counts them.
    moved = sum(1 for c in view.cells if c.status == SKIPPED and c.label == "moved")
    for count, word in ((moved, "moved"), (view.count(SKIPPED) - moved, "skipped")):
        if count:
            parts.append((f" · {count} {word}", "$foreground-muted"))
    current = view.current
    if view.cluster is not None:  # Slurm: several tasks at once, counted per state
        parts.append((slurm_counts(view), "bold" if view.count("running") else ""))
        if view.state != "running":
            parts.append((f" · {view.state}", "$foreground-muted"))
    elif current is not None:
        parts.append((f" · {shown(current.name)}", "$accent"))
        ran = current.ran(view.now)  # the cell's own time, as the Queue tab says it
        if ran:
            parts.append((f" for {ran}", "$foreground-muted"))
    elif view.state not in ("running",):
        parts.append((f" · {view.state}", "$foreground-muted"))
        appended = _after_the_last_done(view) if view.state == FINISHED else 0
        if appended:
            # Appended after the end, never launched: "finished" read as all run while
            # the box idled and billed (hour s24c #9). Before elapsed: the line is cut.
            parts.append(
                (f" · {appended} not run{'' if torn_down else ': L starts'}", "bold $warning")
            )
    if view.elapsed_s is not None:  # the queue's, since its launch: named as such
        parts.append((f" · elapsed {view.elapsed_text()}", "$foreground-muted"))
    line = Content.assemble(*parts)
    if view.state == STOPPED and view.cluster is None and not torn_down:
        # The runner died without its done record (kill -9, the box's OOM killer): said
        # on the pane, not only as "stopped" (a user's hour saw no alert at all).
        resume = (
            f", L resumes from cell {view.resume_index}" if view.resume_index is not None else ""
        )
        line += Content.assemble(
            "\n",
            ("✖ its runner is gone (killed, or the box's OOM killer): ", "bold $warning"),
            f"d says why{resume}",
        )
    why = view.last_failed
    if why is not None and why.note:
        line += Content.assemble("\n", (f"✖ {shown(why.name)}: ", "bold $error"), shown(why.note))
    if view.cluster is not None:
        line += Content.assemble("\n", (cluster_text(view), "$foreground-muted"))
    return line


def cell_line(cell: CellView, now: int) -> Content:
    """``✓ 0  cell_a          done       1m02s  code 1a2b3c4d5e6f · git 89abcde`` (failed
    shows its exit code; a started cell names the code its last attempt ran, U42)."""
    style = STATUS_STYLE.get(cell.status, "")
    after: list[str | tuple[str, str]] = []
    if cell.attempts:
        after.append((f"  {code_brief(cell.code)}", "$foreground-muted"))
    if cell.retries:  # queue retry: how often, and where the last one set outputs aside
        after.append((f"  {shown(cell.retry_text())}", "$foreground-muted"))
    if cell.note:
        after.append((f"  {shown(cell.note)}", "$warning"))
    ran = cell.ran(now)
    # Padded when a column follows, so it starts at one place on every row ("4s" and
    # "21s" alike); none at the end of a row.
    if after:
        ran = f"{ran:<{RAN_WIDTH}}"
    return Content.assemble(
        (f"{STATUS_MARK.get(cell.status, ' ')} ", style),
        (f"{cell.index:>3}  ", "$foreground-muted"),
        (pad(shown(cell.name), 28) + " ", "bold"),
        # Two spaces: the longest labels ("killed by the user") are 18 wide, and ran
        # directly after one read as part of it ("killed by the user 1m39s").
        (f"{shown(cell.label):<18}  ", style),
        (ran, "$foreground-muted"),
        *after,
    )


def queue_lines(
    view: QueueView, *, answering: bool = True, torn_down_at: float | None = None
) -> list[Content]:
    """The tab's body: summary, resume hint, one line per cell. ``answering`` False: the
    box is silent and ``view`` its last read, said with when (ux-e #4: "running" on a box
    lost minutes ago read as live). ``torn_down_at``: the box is recorded torn down, and
    the hint says so instead of offering L and R, which it refuses (h542 #3)."""
    muted = "$foreground-muted"
    lines = [
        Content.assemble(
            ("queue ", muted),
            (shown(view.state), "bold"),
            (" · ", muted),
            shown(view.summary(with_state=False)),
        )
    ]
    if not answering:
        lines.append(
            Content.styled(
                f"as of {clock_hhmm(view.now)}: the box does not answer, so this is its last "
                "read (a cell moved since reads moved once it answers)",
                "bold $warning",
            )
        )
    if view.stop_text():  # queue stop (S) or kill --then stop: asked for, or done
        lines.append(Content.styled(shown(view.stop_text()), "bold $warning"))
    ended = any(c.status in ENDED for c in view.cells)
    pending = any(c.status == PENDING for c in view.cells)
    # The hint line below names L and where its plan starts whenever nothing runs and a
    # cell is left: the resume line then said it a third time, beside the summary's
    # "resume from cell N" (h525 #7: three lines stacked after a stop).
    hint_says_l = view.current is None and (ended or (pending and not view.runner_alive))
    if view.resume_index is not None and not hint_says_l and torn_down_at is None:
        lines.append(
            Content.assemble(
                (
                    f"{'stopped' if view.state in (USER_STOPPED, GROUP_STOPPED) else 'interrupted'}"
                    " — resume from index ",
                    "$warning",
                ),
                (str(view.resume_index), "bold $warning"),
                ("  (press L: the launch plan starts there)", muted),
            )
        )
    if view.cluster is not None:
        lines.append(Content.styled(cluster_text(view), muted))
    if view.cells:
        hint = (
            f"torn down at {local_time(torn_down_at)}: nothing is sent to it any more · m "
            "moves an unfinished cell to another box"
            if torn_down_at is not None
            # R only with a cell it can take (hour s45a #10: offered beside the one cell,
            # running, then "no failed, killed or finished cell to retry").
            else control_hint(view)
            if view.current is not None
            else ended_hint(view)
            if ended
            else idle_hint(view)
        )
        lines.append(Content.styled(hint, muted))
    lines.append(Content(""))
    if not view.cells and torn_down_at is not None:  # never launched, torn down (h545 #2)
        lines.append(
            Content.styled(
                f"torn down at {local_time(torn_down_at)} with no cells on the box: nothing "
                "is sent to it any more · m moves a cell of its queue file to another box",
                muted,
            )
        )
    elif not view.cells:
        lines.append(Content.styled("no cells deployed on the box yet (press L to launch)", muted))
    lines += [cell_line(c, view.now) for c in view.cells]
    return lines


def not_sent_lines(view: QueueView, *, torn_down: bool = False) -> list[Content]:
    """The local file's cells the box does not hold yet, after the box's cells and the
    running cell's work at risk (which reads as part of that cell's row): what
    `queue show` prints, in this tab's keys (a user who had just added lines could not
    tell from the tab whether they would run; review s26 #2). ``torn_down``: nothing is
    sent to the box any more, so no L or a is offered (review h544 #3)."""
    not_sent = view.not_sent
    if not_sent is None:
        return []
    where = shown(not_sent.file)
    them = "it" if len(not_sent.cells) == 1 else "them"
    yet = "not on the box yet"
    if torn_down:
        how = f"the box is torn down, so nothing sends {them}: m moves a cell to another box"
    elif not view.cells:  # nothing sent yet: the first launch sends the whole file
        how, yet = f"L (Launch) sends and runs {them}", "none on the box yet"
    elif view.runner_alive and not view.stop_requested and not_sent.stale:
        # What a (Append) would answer (h471 #6: this line promised it, the append refused).
        how = (
            f"{not_sent.stale_said('the box')}: append {them} once the queue ends, after y "
            f"(Sync) — a (Append) refuses {them} now"
        )
    elif view.runner_alive and not view.stop_requested:
        how = f"a (Append) sends {them}, and the running queue runs {them} after its cells"
    elif view.runner_alive:
        sync = "y (Sync), " if not_sent.stale else ""  # refused until the queue ends
        how = f"the queue stops after its current cell, then {sync}L (Launch) sends and runs {them}"
    else:
        how = f"L (Launch) sends and runs {them} (the queue is not running; a only sends {them})"
    if not_sent.stale and not view.runner_alive and not torn_down:  # a launch needs a sync
        how = f"{not_sent.stale_said('the box', running=False)}: y (Sync) first, then {how}"
    faults = not_sent.faults_said(where)
    if not not_sent.cells:  # only lines `queue check` finds at fault were added
        return [Content.styled(f"not sent: {faults}", "$warning")]
    if not_sent.problems:  # append and launch refuse a file with a line at fault
        how = f"once the lines at fault are put right, {how}"
    cells = len(not_sent.cells)
    head = f"not sent: {plural(cells, 'cell')} of {where}{not_sent.span}, {yet}: {how}"
    lines = [Content(""), Content.styled(head, "$warning")]
    lines += [
        Content.assemble(
            "  ",
            (f"{index:>3}  ", "$foreground-muted"),
            (pad(shown(cell.name), 28) + " ", "bold"),
            (f"{not_sent.label(cell):<18}  ", "$warning"),
            (f"line {cell.line}", "$foreground-muted"),
        )
        for index, cell in not_sent.cells
    ]
    if not_sent.problems:
        lines.append(Content.styled(f"  and {faults}", "$warning"))
    return lines


def running_risk_lines(
    host: HostConfig,
    snap: HostSnapshot | None,
    verified: tuple[str, Checkpoint | None] | None,
    *,
    answering: bool = True,
    running: str | None = None,
) -> list[Content]:
    """The running cell's work at risk under its queue (issue 40), the pane's words with
    the cell named: ``eta_long: ckpt 3m ago on box · 41m ago verified here`` and, for an
    interruptible host, the Young/Daly line. ``verified``: (cell, its newest pulled and
    verified checkpoint) as the spot controller last handed it; another cell's is none.
    ``answering``: as ``at_risk_lines``. ``running``: the queue's running cell; a sample
    naming another (the agent's look lags the records) gives no line, as under that row
    it read as its own (a user's hour: "box1_wide: no checkpoint seen" under box1_lr1e-3)."""
    if snap is None or snap.cell is None:
        return []
    if running is not None and snap.cell != running:
        return []
    mine = verified[1] if verified is not None and verified[0] == snap.cell else None
    lines = at_risk_lines(host, snap, mine, answering=answering)
    if not lines:
        return []
    return [Content.assemble((f"{shown(snap.cell)}: ", "bold"), lines[0]), *lines[1:]]


def _after_the_last_done(view: QueueView) -> int:
    """The cells never run after the last done one: what ``L``'s default start runs. Those
    before it were passed over by a launch's ``--start`` (review s24 #8), not left to run."""
    last_done = max((c.index for c in view.cells if c.status == DONE), default=-1)
    return sum(1 for c in view.cells if c.status == PENDING and c.index > last_done)
