"""Teardown tab: the gate's checklist, the profile's facts, and the typed confirmation.

Every condition is shown with its evidence; a missing or running cell can be
acknowledged by name (a name not in the host's queue is refused with the list), and so
can an unfinished one (failed, killed, interrupted, ended by the scheduler, pending: a
name the checklist does not show unfinished is refused with those it does); the last
step is an input where the host's name is typed. ``t`` puts the cursor there, and the
cursor stays there until the teardown is recorded: after a wrong name, a name refused
(the gate locked, another job running) and the first confirmation when no teardown
command is configured, since the name is typed there a second time. Nothing else moves
it (samples, job results, records another process wrote), so what the user types never
reaches a single-key binding. In the box ``t`` is a letter; ``Ctrl+R`` (the detail
screen's) or the Re-check button re-checks. Each locked line names the key that settles it.
Enter in the cell's box records the one acknowledgement the checklist asks of that cell
(or says why it records none); after an acknowledgement the cursor is back in the name
box. The buttons wear their focus in their text, and a line under them says what Enter
does there.
Only an exact match starts the teardown job, which re-scans the box right then. Without
a teardown command the tab shows what to destroy by hand and asks for the name a second
time, once the box is destroyed; only that second name records the teardown.

Over 450 lines: one tab whose focus rules (the name box, the cell box, the type-ahead
after t) are one safety argument with the text it draws; the text is content/.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.geometry import Region
from textual.widgets import Button, Input, Static

from rgt_tui.content.box_text import shown
from rgt_tui.content.pull_view import join
from rgt_tui.content.teardown_text import MUTED, checklist_lines, outcome_lines, profile_lines
from rgt_tui.controllers.jobs import HostJobs
from rgt_tui.domain import teardown_gate as g
from rgt_tui.domain.queue_state import PENDING
from rgt_tui.domain.units import plural
from rgt_tui.screens.dialog import DialogButton, KeyHint
from rgt_tui.screens.job_keys import JobRequested
from rgt_tui.screens.tabs.base import DetailTab, HostView
from rgt_tui.screens.type_ahead import InOrderInput
from rgt_tui.services.journal import BoxHistory
from rgt_tui.widgets.hanging import Hanging

if TYPE_CHECKING:
    from rgt_tui.services.teardown import GateReport

CONFIRM_PLACEHOLDER = "type the host's name to tear it down"
MANUAL_PLACEHOLDER = "type the host's name again once you destroyed the box"
TORN_DOWN_PLACEHOLDER = "recorded as torn down: nothing to type"
GROUP_PLACEHOLDER = "a group: each box is torn down from its own pane"
# The checklist line whose locked cells each kind of acknowledgement settles, and the
# button that records it (``gate_fixes`` names the same buttons).
ACK_KINDS = {"roster": "missing", "idle": "running", "unfinished": "unfinished"}
# Lines whose cells no acknowledgement here settles: the group's, a name used twice, a box
# that did not answer (``gate_fixes``).
NOT_ACCEPTABLE = frozenset({g.GROUP_CELL, g.GROUP_ROSTER, g.NAME_TWICE, g.NOT_ANSWERING})
ACK_BUTTONS = {
    "missing": "Missing: accept",
    "running": "Running: accept",
    "unfinished": "Unfinished: accept",
}
ACK_IDS = tuple(f"ack-{kind}" for kind in ACK_BUTTONS)
GROUP_ACKS_NOTHING = (
    "nothing is acknowledged under a group's name: acknowledge the cell on each box's "
    "own Teardown tab (its gate asks for its own cells)"
)


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at))


def history_lines(history: tuple[BoxHistory, ...]) -> list[Content]:
    """Earlier boxes under this host's name (the journal's ``BoxHistory``): shown as
    history, never counted for the box there now."""
    if not history:
        return []
    lines = [
        Content.styled(
            "History: earlier boxes under this name (they count for nothing now)", "bold"
        )
    ]
    for old in history:
        box = old.box
        name = f"box {box.short()}" if box is not None else "an unidentified box"
        at = old.torn_down_at
        fate = f"torn down {_when(at)}" if at is not None else "never recorded as torn down"
        lines.append(
            Content.assemble(
                ("• ", MUTED), (name, "bold"), f": {fate}; replaced {_when(old.retired_at)}",
                (f" ({shown(old.why)})" if old.why else "", MUTED),
            )
        )  # fmt: skip
    return lines


class TeardownTab(DetailTab):
    """The teardown checklist of this host and its confirmation."""

    TAB_ID = "teardown"
    TITLE = "Teardown"
    # No Tab stop of its own (nothing shows it focused); its keys still scroll it while
    # a box in it has the cursor. Tab from the name box goes up to the other box one
    # types in (a cell's name), not round through the tab bar: after t the cursor is in
    # the name box, and a cell's name typed after one Tab must land in its own box.
    can_focus = False
    BINDINGS = [Binding("tab", "next_box", "next", show=False)]

    def __init__(self) -> None:
        super().__init__()
        self.jobs: HostJobs | None = None
        self.host_name = ""
        # The name was submitted and matched: once the teardown is recorded, the cursor
        # leaves the box (nothing is left to type). A refusal keeps it there.
        self._confirmed = False
        # The name box holds the host's name now (not yet confirmed by Enter).
        self._name_typed = False
        # What the last draw showed: only a change to it brings the name box back into
        # view. Samples and job news redraw the tab every second or so; a reveal on each
        # undid the user's PageUp within a second (ux-e #10).
        self._drawn: tuple[str, ...] = ()
        # The name box's words for this host now (its placeholder, less how to reach it).
        self._name_prompt = CONFIRM_PLACEHOLDER
        # What the tab itself said about the last Enter in the cell's box ("" once the
        # name changes or an acknowledgement is asked for); a refusal of the job's wins.
        self._ack_said = ""
        # The job's refusal the user has moved on from by typing another name: not shown
        # under what Enter now does (a user's hour read a stale "no cell named 'foo'"
        # under "Enter: accept box1_wide"). A new request shows refusals again.
        self._refusal_typed_over: str | None = None
        self._is_group = False  # the host is a [[groups]] entry (show)

    def compose(self) -> ComposeResult:
        yield Static("Checklist", classes="section-title")
        yield Hanging(Content.styled("press t to check the gate", MUTED), id="teardown-checklist")
        # Under the checklist it re-checks, on a row of its own: seen at 80 columns.
        # Buttons that wear their focus in their text (▶ Re-check ◀), as a dialog's do:
        # a user tabbing here reads which one Enter presses, in any theme and capture.
        yield DialogButton(
            "Re-check",
            does="re-check the gate",
            id="recheck",
            variant="primary",
            tooltip="Re-scan the box (Ctrl+R)",
        )
        yield Static("Platform", classes="section-title")
        yield Hanging(id="teardown-profile")
        yield Static("Acknowledge a cell by name", classes="section-title")
        with Horizontal(classes="teardown-row"):
            yield InOrderInput(placeholder="cell name", id="ack-cell", select_on_focus=False)
        # A row of their own: with their focus marks they do not fit beside the name at 80
        # columns.
        with Horizontal(classes="teardown-row"):
            yield DialogButton(
                ACK_BUTTONS["missing"],
                does="accept the cell as missing",
                id="ack-missing",
                tooltip="The typed cell is missing: accept that it left no results",
            )
            yield DialogButton(
                ACK_BUTTONS["running"],
                does="accept the cell as running",
                id="ack-running",
                tooltip="The typed cell is still running: accept tearing it down running",
            )
            yield DialogButton(
                ACK_BUTTONS["unfinished"],
                does="accept the cell as unfinished",
                id="ack-unfinished",
                tooltip="The typed cell's work is unfinished (failed, killed, interrupted, "
                "pending): accept tearing down without it",
            )
        hint = KeyHint(id="ack-keys")
        hint.display = False  # shown while the cursor is in the cell's box or on a button
        yield hint
        yield Static(id="ack-note")
        yield Static("Confirm", classes="section-title")
        # Not selected on focus: the keys typed after t are in it by then (hour s22c #2).
        yield InOrderInput(
            placeholder=CONFIRM_PLACEHOLDER, id="confirm-name", select_on_focus=False
        )
        yield Hanging(id="teardown-outcome")
        yield Hanging(id="teardown-history")

    def show(self, view: HostView) -> None:
        self.host_name = view.host.name
        self._is_group = view.host.group is not None  # known before any gate check
        for ident in ACK_IDS:  # nothing to press on a group's tab (GROUP_ACKS_NOTHING)
            if self.query(f"#{ident}"):
                self.query_one(f"#{ident}", Button).disabled = self._is_group
        self._draw()

    def show_jobs(self, jobs: HostJobs) -> None:
        """Take the host's new job state and draw it."""
        self.jobs = jobs
        self.host_name = jobs.host
        self._draw()

    def take_focus(self) -> Input | None:
        """Put the cursor in the confirmation box: the name typed next lands there."""
        if not self.query("#confirm-name"):
            return None  # not composed yet, or removed: nothing to type into
        box = self.query_one("#confirm-name", Input)
        # The screen's set_focus acts now (Widget.focus waits a turn): keys already on
        # their way must find the box focused, not the screen's single-key bindings.
        self.screen.set_focus(box)
        self.call_after_refresh(self._reveal)
        return box

    def _reveal(self, tries: int = 4) -> None:
        """The box, when it has the cursor, in view, with what was said under it (a
        refusal, the by-hand steps) as far as the screen allows: it is below the
        checklist, which is drawn as the gate's facts arrive and pushes it down (at
        120x40, off the screen): never typing blind, never a refusal out of sight."""
        if not self.query("#confirm-name") or not self.query("#teardown-outcome"):
            return
        box = self.query_one("#confirm-name", Input)
        if self.screen.focused is not box:
            return
        self.scroll_to_region(self._wanted(), animate=False, immediate=True)
        # Looked at again for a few refreshes: a loaded machine laid the checklist's new
        # lines out a refresh after this, and the box stayed under the tab's edge (a CI
        # run: y 49 of a 36-row tab). Not once the user scrolled meanwhile: theirs.
        self.call_after_refresh(self._reveal_again, self.scroll_y, tries)

    def _wanted(self, *, on_screen: bool = False) -> Region:
        """The box and what is said under it: in the tab's own (scrolled) coordinates to
        scroll there, or on the screen to check that both are in view."""
        box = self.query_one("#confirm-name", Input)
        said = self.query_one("#teardown-outcome", Static)
        region = box.region if on_screen else box.virtual_region
        said_region = said.region if on_screen else said.virtual_region
        if said_region.height:
            region = region.union(said_region)  # cropped to the screen from the box's top
        return region

    def _reveal_again(self, scrolled_to: float, tries: int) -> None:
        if tries <= 0 or self.scroll_y != scrolled_to:
            return
        if not self.query("#confirm-name") or not self.query("#teardown-outcome"):
            return
        # The words under the box count too: by-hand steps laid out a refresh after the
        # reveal were left below the tab's edge with the box itself in view (a loaded CI
        # run, 80x24: "Do this by hand now" on the last row, its steps out of sight).
        wanted = self._wanted(on_screen=True)
        view = self.scrollable_content_region  # both on the screen
        if wanted.y < view.y or wanted.y + min(wanted.height, view.height) > view.bottom:
            self._reveal(tries - 1)
        else:
            self.call_after_refresh(self._reveal_again, scrolled_to, tries - 1)

    def action_next_box(self) -> None:
        """Tab: from the name box to the cell-name box; anywhere else, the next stop."""
        if self.screen.focused is not None and self.screen.focused.id == "confirm-name":
            self.screen.set_focus(self.query_one("#ack-cell", Input))
        else:
            self.screen.focus_next()

    @on(Input.Changed, "#confirm-name")
    def _typed(self, event: Input.Changed) -> None:
        self._reveal()
        was, self._name_typed = self._name_typed, event.value.strip() == self.host_name
        if was != self._name_typed:
            self._draw()  # the confirmed line and the verdict follow the name (h542 #10)
        else:
            self._show_keys()  # what Enter does follows the name typed

    def on_mount(self) -> None:
        # State that arrived while the tab was still composing is drawn now.
        self.call_after_refresh(self._draw)

    def _draw(self) -> None:
        jobs = self.jobs
        if jobs is None or not self.is_mounted or not self.query("#teardown-outcome"):
            return  # not composed yet: on_mount draws it
        checklist: list[Content] = []
        # Recorded as torn down, yet the same box answers (GEN1): it may still bill.
        still = jobs.still_answers_at is not None and jobs.torn_down_at is not None
        if jobs.running in ("gate", "acknowledge", "teardown"):
            checklist.append(
                Content.styled(f"{jobs.running}: re-scanning the box…", "bold $accent")
            )
        if jobs.gate_error:
            checklist.append(
                Content.assemble(
                    ("✖ cannot check: ", "bold $error"), shown(jobs.gate_error, lines=True)
                )
            )
        if jobs.gate is not None:
            if jobs.gate_at is not None and not jobs.running and not jobs.gate_outdated:
                # When: a ✓ read as the box's state now, on a tab opened later (hour s30).
                at = time.strftime("%H:%M:%S", time.localtime(jobs.gate_at))
                checklist.append(Content.styled(f"checked {at} · Ctrl+R re-checks", MUTED))
            if jobs.gate_outdated and not jobs.running:
                checklist.append(
                    Content.styled(
                        shown(
                            f"older than what happened since: {jobs.gate_outdated}; "
                            "Ctrl+R re-checks"
                        ),
                        "bold $warning",
                    )
                )
            checklist += checklist_lines(
                jobs.gate,
                torn_down=jobs.torn_down_at is not None,
                still_answers=still,
                typed=self._name_typed,
            )
        # A group's profile would be rank 0's, which another box's may not be (a user's
        # hour): said before any check, as the name box's words are.
        if self._group():
            profile = [
                Content.styled("a group: each box's own Teardown tab shows its platform", MUTED)
            ]
            self.query_one("#teardown-profile", Static).update(join(profile))
        elif jobs.gate is not None:
            self.query_one("#teardown-profile", Static).update(join(profile_lines(jobs.gate)))
        if checklist or jobs.gate is None:
            self.query_one("#teardown-checklist", Static).update(
                join(checklist) if checklist else Content.styled("press t to check the gate", MUTED)
            )
        self._show_ack_note()
        self._show_keys()
        outcome: list[Content] = []
        if jobs.voided:
            outcome.append(Content.styled(shown(jobs.voided, lines=True), "bold $warning"))
        if jobs.refusal:
            outcome.append(Content.styled(shown(jobs.refusal, lines=True), "bold $warning"))
        if jobs.teardown is not None:
            outcome += outcome_lines(
                jobs.teardown, jobs.torn_down_at is not None, jobs.host, still_answers=still,
                since=jobs.gate_outdated,
            )  # fmt: skip
        elif jobs.shown_torn_down_at is not None:
            outcome.append(Content.styled("recorded as torn down", "bold $success"))
        # Whatever was done in this session: the teardown's own lines above must not be
        # the last word while the same box answers (a user's hour).
        if still:
            # The forgotten-box leak (GEN1): the record says gone, the box answers.
            outcome.append(
                Content.styled(
                    f"✖ recorded as torn down {_when(jobs.torn_down_at)}, but the same box "
                    f"STILL ANSWERS (heard {_when(jobs.still_answers_at)}): it may still be "
                    "billing — destroy it in the provider's console",
                    "bold $error",
                )
            )
        elif jobs.refused_key is not None and jobs.torn_down_at is not None:
            outcome.append(
                Content.styled(
                    f"another box answers (host key {jobs.refused_key}, refused): not the "
                    "torn-down box; check its key (K) to see which box it is",
                    "bold $warning",
                )
            )
        self.query_one("#teardown-outcome", Static).update(join(outcome))
        self.query_one("#teardown-history", Static).update(join(history_lines(jobs.history)))
        box = self.query_one("#confirm-name", Input)
        if jobs.torn_down_at is not None:  # recorded: nothing left to type (a user's hour)
            self._name_prompt = TORN_DOWN_PLACEHOLDER
        elif self._group():  # the box stays: keys typed after t must not become commands
            self._name_prompt = GROUP_PLACEHOLDER
        else:
            self._name_prompt = MANUAL_PLACEHOLDER if jobs.awaiting_manual else CONFIRM_PLACEHOLDER
        self._show_prompts()
        self._release_when_done(jobs, box)
        drawn = tuple(
            str(self.query_one(f"#{name}", Static).content)
            for name in ("teardown-checklist", "ack-note", "teardown-outcome", "teardown-history")
        )
        if drawn != self._drawn:  # new lines may push the box down: once they are laid out
            self._drawn = drawn
            self.call_after_refresh(self._reveal)

    def _release_when_done(self, jobs: HostJobs, box: Input) -> None:
        """The name typed here was refused: the cursor stays. The teardown it confirmed is
        recorded: the keys (t, p, v, Esc) act on the screen again, unless the user is
        typing something else in the box meanwhile."""
        if not self._confirmed:
            return
        if jobs.refusal and not jobs.running:
            self._confirmed = False
        elif jobs.torn_down_at is not None or (jobs.teardown and jobs.teardown.cluster):
            self._confirmed = False  # recorded, or a cluster's gate opened: nothing to type
            if self.screen.focused is box and not box.value:
                self.screen.set_focus(None)

    def _request(self, job: str, arg: str = "") -> None:
        if self.host_name:
            self.post_message(JobRequested(self.host_name, job, arg))

    @on(Button.Pressed, "#ack-missing, #ack-running, #ack-unfinished")
    def _acknowledge(self, event: Button.Pressed) -> None:
        event.stop()
        cell = self.query_one("#ack-cell", Input).value.strip()
        if not cell:
            self.notify("Type the cell's name first", severity="warning")
            return
        self._send_ack((event.button.id or "").removeprefix("ack-"), cell)

    @on(Input.Submitted, "#ack-cell")
    def _ack_entered(self, event: Input.Submitted) -> None:
        """Enter in the cell's box: the one acknowledgement the checklist asks of that
        cell; otherwise it says what to type or press, and records nothing."""
        event.stop()
        cell = event.value.strip()
        kinds = self._asked().get(cell, [])
        if len(kinds) == 1 or self._group():  # a group's: refused, said (_send_ack)
            self._send_ack(kinds[0] if kinds else "", cell)
            return
        self._ack_said = self._enter_does(cell) or ""
        self._show_ack_note()
        self._show_keys()

    def _send_ack(self, kind: str, cell: str) -> None:
        """Ask for ``kind``'s acknowledgement of ``cell``, then put the cursor in the name
        box, where the checklist's next step ("ready: type …") is typed — or, while the
        checklist asks about other cells, back in the cell box. Never for a
        group: it was recorded in the group's journal with a box's id (a groups hour,
        s39 #7), where each box's own gate asks for its own."""
        if self._group():
            self._ack_said = GROUP_ACKS_NOTHING
            self._show_ack_note()
            self._show_keys()
            return
        self._ack_said = ""
        self._refusal_typed_over = None
        others = [c for c in self._asked(acceptable=True) if c != cell]
        self._request(f"acknowledge-{kind}", cell)
        box = self.query_one("#ack-cell", Input)
        box.value = ""
        if others:
            # More cells to accept: the cursor stays here, so the next name typed is not
            # taken as the host's name in the confirm box (h505 #2).
            box.focus()
            return
        self.take_focus()

    def _asked(self, *, acceptable: bool = False) -> dict[str, list[str]]:
        """Each cell the checklist asks to acknowledge, with the kinds that settle it;
        ``acceptable``: only where an acknowledgement here settles it (not a group's cell,
        a name used twice, a box that did not answer: review h506 #6)."""
        report = self._report
        asked: dict[str, list[str]] = {}
        for c in report.conditions if report is not None else ():
            kind = ACK_KINDS.get(c.key)
            if acceptable and c.cause in NOT_ACCEPTABLE:
                continue
            if kind is not None and not c.ok:
                for cell in c.settle:
                    asked.setdefault(cell, []).append(kind)
        return asked

    @property
    def _report(self) -> GateReport | None:
        """The last gate check's report (None before one)."""
        return self.jobs.gate if self.jobs is not None else None

    @property
    def _gate_state(self) -> g.GateState | None:
        """The gate's state as the last check left it (None before one)."""
        report = self._report
        return report.state if report is not None else None

    def _acknowledged(self, cell: str) -> str:
        """How ``cell`` is acknowledged for this box already (``missing``, ``running``,
        ``unfinished``), "" when it is not."""
        state = self._gate_state
        if state is None:
            return ""
        kinds = [
            kind
            for kind, acked in (
                ("missing", cell in state.acked_missing),
                ("running", any(name == cell for name, _ in state.acked_running)),
                ("unfinished", any(name == cell for name, _ in state.acked_unfinished)),
            )
            if acked
        ]
        return ", ".join(kinds)

    def _runs(self, cell: str) -> bool:
        """``cell`` ran when the last check read the box (unknown: True, the job says)."""
        state = self._gate_state
        return state is None or cell in state.running

    def _still_to_run(self, cell: str) -> str:
        """``running`` or ``pending`` when the last check read ``cell`` so (its queue may
        still bring its results), else ""."""
        state = self._gate_state
        if state is None:
            return ""
        if cell in state.running:
            return "running"
        pending = {name for name, status, _ in state.unfinished if status == PENDING}
        return "pending" if cell in pending else ""

    def _unfinished(self, cell: str) -> bool:
        """``cell`` ran and did not finish when the last check read the box (unknown:
        True, the job says)."""
        state = self._gate_state
        return state is None or cell in {name for name, _, _ in state.unfinished}

    def _not_in_queue(self, cell: str) -> bool:
        """``cell`` is not a cell of the host's queue file, as the last check read it
        (unknown: False): no acknowledgement of it can be recorded, so none is offered."""
        report = self._report
        known = report.queue_cells if report is not None else None
        return bool(cell) and known is not None and cell not in known

    def _enter_does(self, cell: str) -> str | None:
        """What Enter in the cell's box does with ``cell`` typed, in words: the one
        acknowledgement the checklist asks of it (None), or why it does nothing."""
        asked = self._asked()
        kinds = asked.get(cell, [])
        if len(kinds) == 1:
            return None
        named = "; ".join(f"{c} ({', '.join(k)})" for c, k in asked.items())
        wanted = f"it asks for: {named}" if named else "it asks for none"
        if not cell:
            return f"type a cell's name first ({wanted})"
        if kinds:
            buttons = " or ".join(ACK_BUTTONS[k] for k in kinds)
            return f"'{cell}' is {' and '.join(kinds)}: press {buttons} below (Tab)"
        if self._not_in_queue(cell):  # the job would refuse it: offer nothing
            return f"'{cell}' is not a cell of {self.host_name}'s queue ({wanted})"
        done = self._acknowledged(cell)
        if done:  # "not a cell the checklist asks to acknowledge" read as refused (h491 #10)
            return f"'{cell}' is acknowledged already ({done}): nothing more to do for it"
        return (
            f"'{cell}' is not a cell the checklist asks to acknowledge ({wanted}); to accept "
            # Not Running: accept, which holds only for a run the check saw (h551 #1).
            "it anyway, Tab to Missing: accept"
        )

    def _show_ack_note(self) -> None:
        """Under the buttons: the job's refusal of an acknowledgement, else what the last
        Enter in the cell's box said."""
        if not self.query("#ack-note"):
            return
        jobs = self.jobs
        refusal = jobs.ack_refusal if jobs is not None else None
        if refusal == self._refusal_typed_over:
            refusal = None
        said = refusal or self._ack_said
        note = Content.styled(shown(said), "bold $warning") if said else ""
        self.query_one("#ack-note", Static).update(note)

    def _show_keys(self) -> None:
        """The lines under the buttons and under the name box: what Enter does where the
        cursor is, in the cell's box, on one of its buttons or in the name box (each shown
        only there)."""
        if not self.query("#ack-keys") or not self.query("#confirm-name"):
            return
        hint = self.query_one("#ack-keys", KeyHint)
        focused = self.screen.focused if self.is_attached else None
        where = focused.id if focused is not None else None
        cell = self.query_one("#ack-cell", Input).value.strip()
        if where == "ack-cell":
            kinds = self._asked().get(cell, [])
            said = self._enter_does(cell)
            enter = f"accept {cell} as {kinds[0]}" if said is None else f"nothing — {said}"
            # Once Enter was pressed for nothing, the note under this line says why.
            hint.show_keys(None if self._ack_said else enter, ("Tab", "the buttons"))
        elif isinstance(focused, DialogButton) and where in ACK_IDS:
            enter = focused.does.replace("the cell", cell) if cell else None
            if self._not_in_queue(cell):
                enter = f"nothing — '{cell}' is not a cell of {self.host_name}'s queue"
            elif cell and where == "ack-running" and not self._runs(cell):
                # Refused by the job: said before Enter (review h554 #4).
                enter = f"nothing — '{cell}' is not running, as the last check read it"
            elif cell and where == "ack-unfinished" and self._still_to_run(cell) == "running":
                enter = f"nothing — '{cell}' is running: Running: accept is its button"
            elif cell and where == "ack-unfinished" and not self._unfinished(cell):
                # The same for a cell that never ran (h591 #3: the hint said "accept it
                # as unfinished", and Enter refused).
                enter = f"nothing — '{cell}' is not unfinished, as the last check read it"
            elif cell and where == "ack-missing" and self._still_to_run(cell):
                # Refused by the job while its queue may still run it (h595 #4).
                enter = (
                    f"nothing — '{cell}' is {self._still_to_run(cell)}: accept it as missing "
                    "once its queue has ended or been stopped"
                )
            hint.show_keys(enter or "nothing — type the cell's name first", ("Shift+Tab", "back"))
        hint.display = where == "ack-cell" or where in ACK_IDS
        # The name box's keys, in its bottom border while it has the cursor (a user's hour
        # found none; a line of their own pushed the checklist's top off a full screen).
        confirm = self.query_one("#confirm-name", Input)
        manual = self.jobs is not None and self.jobs.awaiting_manual
        does = "record it destroyed" if manual else "tear it down"
        answers = getattr(self.app, "box_answers", None)
        if manual and answers is not None and answers(self.host_name):
            # The record is refused while the box answers (review s45 #5: the border
            # promised it, and Enter refused).
            does = "nothing (it still answers)"
        locked = self._unticked()
        if locked and not manual:
            # Enter checks again and refuses while a line is unticked: "Enter: tear it
            # down" over a locked gate said otherwise (hour s22a #13).
            # Short: the whole line fits the box's border at 80 columns ("check again
            # (locked: 11 unticked) · Tab: cell …" was cut there: hour s30).
            does = f"re-check ({len(locked)} unticked)"
        typed = confirm.value.strip()
        if not typed and (manual or not locked):
            # Enter on an empty box says "'' is not 'box2'": "Enter: tear it down" over
            # it promised a teardown (hour s45a #6).
            does = "nothing (no name)"
        if typed and typed != self.host_name:
            # A wrong name tears nothing down and checks nothing ("'bxo1' is not 'box1'"):
            # "Enter: tear it down" over it said otherwise (a user's hour, s42).
            does = f"nothing (not {self.host_name})"
        if self._group():
            does = "nothing (a group)"
        confirm.border_subtitle = (
            f"Enter: {does} · Tab: cell box · Esc: back" if where == "confirm-name" else ""
        )
        # The notes under the checklist (a run started by hand, another account on the
        # machine) sit above the fold at 80x24 once the tab scrolls here (h515 #3).
        report = self._report
        notes = len(report.problems) if report is not None else 0
        confirm.border_title = f"! {plural(notes, 'note')} above: read first" if notes else ""

    def _unticked(self) -> list:
        """The checklist's unticked lines but the typed name's (none before a check)."""
        report = self._report
        return [c for c in report.conditions if not c.ok and c.key != "confirmed"] if report else []

    def _group(self) -> bool:
        """The host is a [[groups]] entry (its gate is one line naming its boxes)."""
        return self._is_group

    def _show_prompts(self) -> None:
        """The boxes' placeholders; without the cursor, how to give it to them (t): the tab
        shown by 6 has none there, and a name typed then ran keys ("box1": the 1 showed
        the Overview; a user's hour, session 29)."""
        if not self.query("#confirm-name") or not self.query("#ack-cell"):
            return
        box, cell = self.query_one("#confirm-name", Input), self.query_one("#ack-cell", Input)
        typing = self._name_prompt in (CONFIRM_PLACEHOLDER, MANUAL_PLACEHOLDER)
        # From the cell box t is a letter; Shift+Tab is the way back (hour s45a #7).
        back = "Shift+Tab" if cell.has_focus else "press t"
        box.placeholder = (
            self._name_prompt
            if box.has_focus or not typing
            else f"{back}, then {self._name_prompt}"
        )
        cell.placeholder = (
            # Its work is over: "(t, then Tab)" offered an acknowledgement nothing asks for.
            "torn down: nothing to accept"
            if self._name_prompt == TORN_DOWN_PLACEHOLDER
            else "cell name"
            if cell.has_focus
            else "cell name (Tab)"
            if box.has_focus
            else "cell name (t, then Tab)"
        )

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._show_prompts()
        self._show_keys()

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        self._show_prompts()
        self._show_keys()

    @on(Input.Changed, "#ack-cell")
    def _cell_typed(self, event: Input.Changed) -> None:
        refusal = self.jobs.ack_refusal if self.jobs is not None else None
        if self._ack_said or (refusal and event.value):
            self._ack_said = ""
            if event.value:  # not the box emptied after a request
                self._refusal_typed_over = refusal
            self._show_ack_note()
        self._show_keys()

    @on(Button.Pressed, "#recheck")
    def _recheck(self, event: Button.Pressed) -> None:
        event.stop()
        self._request("gate")

    @on(Input.Submitted, "#confirm-name")
    def _confirm(self, event: Input.Submitted) -> None:
        event.stop()
        typed = event.value.strip()
        event.input.value = ""
        manual = self.jobs is not None and self.jobs.awaiting_manual
        # The cursor stays here whatever comes of it: a refusal (the gate locked, a job
        # running, "another box answers") has the name typed again, and so does the first
        # confirmation without a teardown command ("type it again below"). Moving it now
        # turned that typing into actions ("1" switching tabs). It leaves once the
        # teardown is recorded (_release_when_done).
        if not typed and not manual and self._unticked():
            # What the box's border promised ("Enter: re-check (7 unticked)"): an empty
            # name over a locked gate checks again; it answered "'' is not 'box3'" (h461 #2).
            self._request("gate")
            return
        self._confirmed = typed == self.host_name
        self._request("manual-teardown" if manual else "teardown", typed)
