"""What the Teardown tab says, as styled text: pure functions of the gate's report and the
teardown's outcome.

The same words as the command line (``cli/teardown.py``): each checklist line reads what
the condition needs, then what was found (``gate_fixes.NEEDS``, ``FOUND``), so a locked
line never reads as a contradiction; the by-hand steps name the box (its id and host
key) as the command line does.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from textual.content import Content

from rgt_tui.content.box_text import shown
from rgt_tui.domain.gate_fixes import FOUND, fixes, needs

if TYPE_CHECKING:
    from rgt_tui.services.teardown import GateReport, TeardownOutcome

MUTED = "$foreground-muted"


def checklist_lines(
    report: GateReport, torn_down: bool = False, still_answers: bool = False, typed: bool = False
) -> list[Content]:
    """Every gate condition: what it needs, what was found, and under each locked one the
    key that settles it; then why facts are missing, and the verdict. ``torn_down``: the
    box is recorded as torn down now: nothing is left to type. ``still_answers``: yet the
    same box answers (GEN1): the verdict says that, never an all-clear. ``typed``: the
    name box holds the host's name now, not yet confirmed by Enter (h542 #10: "not typed
    yet" beside the name typed)."""
    lines = []
    settles = fixes(report.conditions, report.host.name, tui=True)
    for c, settle in zip(report.conditions, settles, strict=True):
        if torn_down and c.key == "confirmed":
            continue  # typed already: the teardown is recorded
        # Only where Enter confirms it: on a locked gate Enter re-checks (h545 #6).
        if typed and report.ready_but_confirmation and c.key == "confirmed" and not c.ok:
            c = replace(c, evidence=f"'{report.host.name}' typed below, not confirmed yet")
            settle = "Enter confirms it"
        mark, style = ("✓", "$success") if c.ok else ("✖", "$error")
        lines.append(
            Content.assemble(
                (f"{mark} ", f"bold {style}"),
                (f"{c.key:<11} ", "bold"),  # "unfinished" then two spaces: its value hangs
                (needs(c.key), MUTED),
                (FOUND, MUTED),
                shown(c.evidence),
                (f" → {settle}" if settle else "", "bold $accent"),
            )
        )
    lines += [Content.styled(shown(f"! {p}"), "$warning") for p in report.problems]
    lines += [Content.styled(shown(f"note: {n}"), "$warning") for n in report.notes]
    if torn_down and still_answers:
        # A user's hour: every line ticked and "nothing left to confirm" while the
        # Alerts tab said the box may still be billing.
        lines.append(
            Content.styled(
                f"{report.host.name} is recorded as torn down, but the box STILL ANSWERS: "
                "it may still be billing — destroy it in the provider's console",
                "bold $error",
            )
        )
    elif torn_down:
        lines.append(
            Content.styled(
                f"{report.host.name} is recorded as torn down: nothing left to confirm",
                "bold $success",
            )
        )
    elif report.unlocked:  # the name typed and its re-scan matched: nothing to type
        lines.append(
            Content.styled(
                f"unlocked: '{report.host.name}' typed and the box re-scanned unchanged",
                "bold $success",
            )
        )
    elif report.ready_but_confirmation:
        ready = (
            f"ready: '{report.host.name}' typed below — Enter tears it down"
            if typed
            else f"ready: type '{report.host.name}' in the Confirm box below to tear it down"
        )
        lines.append(Content.styled(ready, "bold $success"))
    else:
        lines.append(
            Content.styled(
                "locked: nothing will be torn down until every item holds", "bold $error"
            )
        )
    return lines


def profile_lines(report: GateReport) -> list[Content]:
    """The profile's facts: verb, irreversibility, what it destroys, what keeps billing."""
    p = report.profile
    verb = Content.assemble(
        p.teardown_verb,
        ("  IRREVERSIBLE", "bold $error") if p.irreversible else ("  reversible", MUTED),
    )
    rows = [
        ("teardown verb", verb),
        ("destroys", Content(p.destroys)),
        ("keeps billing", Content("; ".join(p.keeps_billing))),
        ("survives stop", Content(p.stop_survives)),
        ("survives meter-stop", Content(p.meter_stop_survives)),
        ("danger clocks", Content("; ".join(p.clock_lines))),
        (
            "teardown command",
            Content(report.host.teardown or "(none: you will be shown what to do)"),
        ),
    ]
    width = max(len(k) for k, _ in rows) + 2  # the longest label, then two spaces
    return [Content.assemble((f"{k:<{width}}", MUTED), v) for k, v in rows]


def outcome_lines(
    outcome: TeardownOutcome,
    torn_down: bool,
    host: str = "the host",
    still_answers: bool = False,
    since: str | None = None,
) -> list[Content]:
    """After the typed confirmation: the command's output and exit code, or instructions
    (for which box: its id and host key).

    Without a command nothing is recorded (and nothing said about billing stopping) until
    the user types the name a second time, in the Confirm box above these lines, to say
    the box is destroyed. A cluster (Slurm) has nothing to destroy: the gate opened, and
    nothing is recorded. ``still_answers``: the same box answered since (GEN1): no
    word that its cost stopped. ``since``: what happened after the gate was checked (a
    cluster's queue ran again): its opening is then what was, not what is.
    """
    if outcome.cluster and since:
        return [
            Content.styled(
                f"the gate opened, but {since}: it may not hold now — Ctrl+R re-checks",
                "bold $warning",
            ),
            Content(outcome.instructions),
        ]
    if outcome.cluster:
        return [
            Content.styled("✓ the gate opened: nothing to destroy", "bold $success"),
            Content(outcome.instructions),
        ]
    if not outcome.ran:
        box = outcome.report.box if outcome.report is not None else None
        which = f" ({box.describe()})" if box is not None else ""
        # Once recorded, the steps are what was done, not "now" (a user's hour read "Do
        # this by hand now" under a box recorded as torn down).
        lead = "What you did by hand, for " if torn_down else "Do this by hand now, for "
        lines = [
            Content.assemble((lead, "bold"), (f"{host}{which}:", "bold")),
            Content(outcome.instructions),
        ]
        lines += [Content.styled(outcome.credentials, MUTED)] if outcome.credentials else []
        if torn_down:
            lines.append(
                Content.styled(
                    "✓ you confirmed the box is destroyed: recorded as torn down"
                    + ("" if still_answers else "; its cost stops here"),
                    "bold $success",
                )
            )
        else:
            lines.append(
                Content.styled(
                    f"NOT recorded as torn down: {host} bills until you destroy it. "
                    f"Once you have, type '{host}' again in the Confirm box above.",
                    "bold $warning",
                )
            )
        return lines
    lines = [Content.styled(outcome.credentials, MUTED)] if outcome.credentials else []
    lines += [
        Content.styled(shown(line), MUTED)
        for line in outcome.output.rstrip("\n").splitlines()[-20:]
    ]
    if outcome.ok and torn_down:
        lines.append(
            Content.styled("✓ teardown command exited 0: recorded as torn down", "bold $success")
        )
    elif outcome.timed_out:
        # The output's last line already says what may have happened (timed_out_note).
        lines.append(
            Content.styled(
                "✖ teardown command TIMED OUT and was stopped with all it started: NOT "
                "recorded as torn down — check the provider's console: the box may be "
                "half-destroyed",
                "bold $error",
            )
        )
    else:
        lines.append(
            Content.styled(
                f"✖ teardown command FAILED (exit {outcome.exit_status}): NOT recorded as torn down",
                "bold $error",
            )
        )
    return lines
