"""What `rgt-tui pull` prints when a pull ends: one host's summary (counts, where the time
went, each failure, conflict and refusal, the code that made the results), the fleet's
summary for `pull --all`, and the tar streams' and egress lines. Text only: the pull
itself, its arguments and its progress are ``cli.pull`` and ``cli.pull_progress``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rgt_tui.agent.secret_paths import skipped_by_rule
from rgt_tui.domain.egress import egress_usd, fmt_usd, moved_line
from rgt_tui.domain.units import fmt_bytes, fmt_took
from rgt_tui.services.pull.copy_words import large_files_lines

if TYPE_CHECKING:  # the services load lazily, so `rgt-tui status` does not pay for them
    from rgt_tui.services.pull import PullOptions, PullResult
    from rgt_tui.services.pull.types import TarStream


def empty_only(result: PullResult) -> bool:
    """The pull's one shortfall is that the box listed no file (no failure, conflict,
    refused root or file): what a group's rank that saved nothing gives."""
    return (
        not result.failed
        and not result.conflicts
        and not result.manifest.entries
        and len(result.shortfalls) == 1
    )


def format_pull_result(
    result: PullResult, verify_as: str | None = None, *, empty_ok: bool = False
) -> str:
    """The summary printed after a pull: counts, then every failure, conflict and refusal.
    ``empty_ok``: a group's folder with no file while another of its folders has some
    (``empty_only``), said as such, not as a shortfall."""
    m = result.manifest
    resumed = sum(1 for f in result.pulled if f.resumed_from)
    lines = [
        f"{result.host}: {len(result.pulled)} pulled ({resumed} resumed), "
        f"{len(result.skipped)} already here, {len(result.failed)} failed — "
        f"{fmt_bytes(result.bytes_received)} in {fmt_took(result.elapsed_s)} into {result.dest}",
    ]
    if result.copy_s > 0 and result.bytes_received:
        rate = result.bytes_received / result.copy_s / 1e6
        lines[0] += f" (copy stage: {rate:.1f} MB/s over {result.copy_s:.2f} s)"
    if result.stages:  # where the time went (issue 44); the manifest overlaps the copy
        spans = [f"{name} {s:.2f} s" for name, s in result.stages if name != "manifest"]
        whole = [f"; box hashes whole at {s:.2f} s" for n, s in result.stages if n == "manifest"]
        lines.append(f"  stages: {', '.join(spans)}{''.join(whole)}")
    lines += [f"  {line}" for line in large_files_lines(result)]
    if result.egress is not None and result.moved:  # U14: what left the box, its cost
        lines.append(f"  {moved_line(result.moved, result.egress)}")
    lines += [f"  small files: {text}" for text in tar_streams_text(result.tar_streams)]
    lines += [f"  {label:<9} {text}" for label, text in result.notices]
    lines += [f"  FAILED    {path}: {why}" for path, why in result.failed]
    lines += [f"  CONFLICT  {path}: {why}" for path, why in result.conflicts]
    # Skipped by rule (a secret, rgt-tui's records): on purpose, not a shortfall. Any other
    # refusal is a MISSING line below, with its fix: listed here too, it was said twice
    # (h491 #11).
    lines += [
        f"  SKIPPED   {m.display(r.root, r.path)}: {r.reason}"
        for r in m.refused
        if skipped_by_rule(r.reason)
    ]
    logs = result.box_logs
    if logs is not None:  # the box's queue and cell logs, kept beside the results (U20)
        got = f"{logs.pulled} new or grown" if logs.pulled else "none new"
        if logs.listed or not logs.note:  # else the note says why there are none: once
            lines.append(f"  box logs: {logs.listed} files ({got}) in {logs.folder}")
        lines += [f"  box logs: {why}" for why in filter(None, [logs.note])]
        lines += [f"  box logs: FAILED {path}: {why}" for path, why in logs.failed]
    if result.code is not None:  # the code that made the results (U42)
        from rgt_tui.services.result_code import result_code_lines

        lines += [f"  {line}" for line in result_code_lines(result.code)]
    if result.ok:
        from rgt_tui.services.result_code import running_line, running_names

        lines += [f"  RUNNING   {line}" for line in filter(None, [running_line(result.code)])]
        running = running_names(result.code)
        # The verdict says it too (hour s31 CLI #12): its tick alone read as final while a
        # cell still wrote, and the RUNNING line above it was passed over.
        lines.append(
            f"every file of the manifest ({len(m.entries)}) is here with a matching SHA-256"
            + (
                f", as the box had them while cell {running} ran; next: pull again once it "
                f"ends, then rgt-tui verify {verify_as or result.host}"
                if running
                else f"; next: rgt-tui verify {verify_as or result.host}"
            )
        )
    elif empty_ok:
        roots = ", ".join(r.given for r in m.roots)
        lines.append(
            f"  nothing under {roots} on this box: a rank may save nothing (its worker that "
            f"saves ran on another box); rgt-tui verify {verify_as or result.host} counts "
            "the cells over the group's folders"
        )
    else:
        lines += [f"  MISSING   {why}" for why in result.shortfalls]
        # "It resumes" only where a copy stopped part-way; else there is nothing to resume.
        again = " (it resumes)" if result.failed else ""
        lines.append(f"NOT COMPLETE: fix the above and re-run the same pull{again}")
    return "\n".join(lines)


def format_fleet_summary(
    outcomes: list[tuple[str, PullResult | tuple[str, str]]],
    elapsed: float,
    options: PullOptions,
    groups: dict[str, str] | None = None,
) -> str:
    """Each host's summary (or why it failed), then the fleet's total and rate.
    ``groups``: a rank's pull name → its group's (which `verify` takes)."""
    lines: list[str] = []
    received = complete = 0
    results = []
    for host, outcome in outcomes:
        if isinstance(outcome, tuple):
            why, fix = outcome
            lines += [f"{host}: FAILED: {why}", f"  fix: {fix}"]
            continue
        lines.append(format_pull_result(outcome, (groups or {}).get(host)))
        received += outcome.bytes_received
        complete += outcome.ok
        results.append(outcome)
    rate = received * 8 / elapsed / 1e6 if elapsed > 0 else 0.0
    budget = f" (budget {options.budget.mbit:g} Mbit/s)" if options.budget is not None else ""
    lines += fleet_egress_lines(results)  # before the verdict, which ends the output
    lines.append(
        f"all hosts: {complete}/{len(outcomes)} complete — {fmt_bytes(received)} in "
        f"{fmt_took(elapsed)}, {rate:.1f} Mbit/s{budget}"  # "0s" beside a rate read as a slip
    )
    return "\n".join(lines)


def tar_streams_text(streams: tuple[TarStream, ...]) -> list[str]:
    """A line per codec and reason: a pull whose small files came in several streams (the
    early copy's, then the rest's) says so once, with their sums (issue ux-e 16)."""
    from rgt_tui.services.pull.types import TarStream

    groups: dict[tuple[str, str], list[TarStream]] = {}
    for t in streams:
        if t.wire:
            groups.setdefault((t.codec, t.reason), []).append(t)
    lines = []
    for (codec, reason), group in groups.items():
        text = tar_stream_text(
            TarStream(codec, sum(t.wire for t in group), sum(t.tar for t in group), reason)
        )
        lines.append(
            text
            if len(group) == 1
            else f"{len(group)} {text.replace('tar stream', 'tar streams', 1)}"
        )
    return lines


def tar_stream_text(t: TarStream) -> str:
    """One tar stream's codec and bytes on the wire (U15): ``zstd -1: 31M → 6.7M on the
    wire (the link (~21 MB/s by 200 ms round trip) is slower than zstd -1)``."""
    codec = "uncompressed" if t.codec == "none" else f"{t.codec} -1"
    return f"tar stream {codec}: {fmt_bytes(t.tar)} → {fmt_bytes(t.wire)} on the wire ({t.reason})"


def fleet_egress_lines(results: list[PullResult]) -> list[str]:
    """The fleet's total transferred and its egress cost, each host at its own price (U14);
    hosts with no known price are named, not counted as free."""
    moved = sum(r.moved for r in results)
    if not moved:
        return []
    priced = [(r, egress_usd(r.moved, r.egress)) for r in results if r.egress is not None]
    usd = sum(c for _, c in priced if c is not None)
    unknown = [r.host for r, c in priced if c is None and r.moved]
    line = f"all hosts: {fmt_bytes(moved)} transferred"  # done, as each host's line says
    if usd > 0:
        line += f" · egress ≈ {fmt_usd(usd)}"
    if unknown:
        line += f" · egress price not set for {', '.join(unknown)} (egress_usd_per_gb)"
    return [line]
