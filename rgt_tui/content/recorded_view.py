"""The Pulls tab's lines for a pull and a verification known from their records only
(``services.recorded_results``): one run from the command line or another TUI."""

from __future__ import annotations

from textual.content import Content

from rgt_tui.content.box_text import shown
from rgt_tui.domain.units import fmt_bytes, fmt_duration, plural
from rgt_tui.services.recorded_results import RecordedPull, RecordedVerify

MUTED = "$foreground-muted"


def _ago(at: float, now: float) -> str:
    return f"{fmt_duration(max(0.0, now - at))} ago"


# What a complete pull taken while a cell ran is: every file listed came, as it was then.
PULLED_WHILE_RUNNING = (
    "✓ every file listed then is here — a cell still ran: pull again once it ends, then v"
)


def pulled_while_running_lines(running: str) -> list[Content]:
    """A complete pull's last lines while ``running`` (``running_line``) names cells that
    ran at the pull: "✓ pull complete" alone read as the all clear (hour s42)."""
    return [
        Content.assemble(("RUNNING   ", "bold $warning"), shown(running)),
        Content.styled(PULLED_WHILE_RUNNING, "bold $warning"),
    ]


def recorded_pull_lines(pull: RecordedPull, now: float, *, verified: bool = False) -> list[Content]:
    """The last recorded pull: when, the manifest's size, and how much of it is here
    (``verified``: a verify of it is on record, so no "next: v to verify")."""
    lines = [
        Content.styled(f"last pull (from its records) {_ago(pull.at, now)}:", MUTED),
        Content(
            f"{pull.here} of {plural(pull.files, 'file')} of the box's manifest here with a "
            f"matching SHA-256 ({fmt_bytes(pull.bytes)} listed)"
        ),
    ]
    if pull.complete and pull.running:
        return lines + pulled_while_running_lines(pull.running)
    if pull.complete:
        done = "✓ pull complete" + ("" if verified else " — next: v to verify")
        lines.append(Content.styled(done, "bold $success"))
        return lines
    lines += [Content.styled(shown(f"  {why}"), "$error") for why in pull.refused]
    if pull.refused_n > len(pull.refused):
        lines.append(Content.styled(f"  … and {pull.refused_n - len(pull.refused)} more", "$error"))
    if pull.here == pull.files:  # every listed file is here: only refused ones are not
        lines.append(
            Content.styled(
                f"✖ NOT COMPLETE: {plural(pull.refused_n, 'file')} refused on the box — settle "
                "each as said, then press p", "bold $error",
            )
        )  # fmt: skip
    else:
        lines.append(
            Content.styled("✖ NOT COMPLETE: press p to pull the rest (it resumes)", "bold $error")
        )
    return lines


OLDER_PULL = "it speaks about an older pull: press v to verify this one"


def as_older(lines: list[Content]) -> list[Content]:
    """A verify of an older pull, under ``OLDER_PULL``: its lines muted, so its green
    "✓ VERIFIED" does not stand under this pull's "NOT COMPLETE" as its verdict (h491 #8)."""
    return [
        Content.styled(OLDER_PULL, "$warning"),
        *(Content.styled(c.plain, MUTED) for c in lines),
    ]


def recorded_verify_lines(verify: RecordedVerify, now: float) -> list[Content]:
    """The last recorded verification: when, the counts, its verdict and problems."""
    summary = ", ".join(f"{n} {k}" for k, n in verify.counts) or "no files"
    lines = [
        Content.styled(f"last verification (from its record) {_ago(verify.at, now)}:", MUTED),
        Content.assemble(("files: ", MUTED), shown(summary)),
    ]
    # A missing cell the problems below name already ("cell x missing: …") is said there.
    said = [p for p in verify.problems if not verify.ok]
    lines += [
        Content.styled(shown(f"  missing cell {name}"), "$error")
        for name in verify.missing
        if not any(p.startswith(f"cell {name} missing") for p in said)
    ]
    if verify.ok:
        lines.append(
            Content.styled("✓ VERIFIED: every file checked, roster complete", "bold $success")
        )
    else:
        lines.append(
            Content.styled(f"✖ NOT VERIFIED: {plural(verify.n_problems, 'problem')}", "bold $error")
        )
        lines += [Content.styled(shown(f"  {p}"), "$error") for p in verify.problems]
    return lines if verify.current else as_older(lines)
