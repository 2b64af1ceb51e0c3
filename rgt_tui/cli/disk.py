"""`rgt-tui disk HOST`: what fills the box's disk; `--delete PATH`: reclaim it, confirmed.

The audit lists the largest folders of each watched mount (bytes and inodes), the
Hugging Face cache by model and the superseded checkpoints (``services.disk.audit``).
``--delete PATH`` (an entry as listed: a folder's full path, a model's ORG/NAME, a
checkpoint's CELL/FILE) checks that nothing would be lost (``services.disk.reclaim``),
asks for that name (or the full path) to be typed (on a terminal; off one ``--confirm``
must repeat the full path, suggested only for a path the checks accept — there is no
``--yes`` for a delete), then checks again on a fresh connection and deletes. No
connection is held while a person decides.

Exit codes: 0 audited / deleted; 1 refused (the refusal names what would be lost), the
box unreachable, or the confirmation not typed; 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from rgt_tui.cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK, EXIT_PROBLEMS
from rgt_tui.cli.prompt import ask
from rgt_tui.cli.runner import Call
from rgt_tui.content.disk_text import audit_lines
from rgt_tui.domain.text import printable
from rgt_tui.domain.units import fmt_bytes
from rgt_tui.services.connect import Transport
from rgt_tui.services.disk.audit import (
    AUDIT_DEPTH,
    AUDIT_SECONDS,
    AUDIT_TOP,
    DiskAudit,
    DiskError,
    audit_disk,
    audit_to_json,
)
from rgt_tui.services.disk.reclaim import DeletePlan, delete_planned, plan_delete


def add_disk_arguments(p: argparse.ArgumentParser) -> None:
    """``--json``, ``--delete PATH`` with ``--confirm PATH``, and the audit's bounds."""
    p.add_argument("--json", action="store_true", help="print the audit as JSON")
    p.add_argument(
        "--delete",
        metavar="PATH",
        help="delete an entry as the audit lists it: a folder's path, a model's ORG/NAME, "
        "a checkpoint's CELL/FILE",
    )
    p.add_argument(
        "--confirm", metavar="PATH", help="PATH typed again, to delete without a terminal"
    )
    p.add_argument("--depth", type=int, default=AUDIT_DEPTH, help="folder depth below each mount")
    p.add_argument("--top", type=int, default=AUDIT_TOP, help="folders listed per mount")
    p.add_argument(
        "--seconds",
        type=int,
        default=AUDIT_SECONDS,
        metavar="S",
        help="time limit of each walk on the box",
    )


def run_disk(call: Call) -> int:
    """Audit HOST's disk; with ``--delete``, delete one listed entry after confirmation."""
    args = call.args
    if min(args.depth, args.top, args.seconds) < 1:
        return call.fail("--depth, --top and --seconds must be 1 or more", code=EXIT_BAD_INPUT)
    if args.confirm is not None and args.delete is None:
        return call.fail("--confirm goes with --delete PATH", code=EXIT_BAD_INPUT)
    host, results = call.host, call.fleet.results_dir

    async def audit(transport: Transport) -> DiskAudit:
        return await audit_disk(
            host, transport, results, seconds=args.seconds, depth=args.depth, top=args.top
        )

    async def check(transport: Transport) -> tuple[DiskAudit, DeletePlan]:
        got = await audit(transport)
        return got, await plan_delete(host, transport, results, got, args.delete)

    try:
        if args.delete is None:
            got = call.on_host(audit)
            if args.json:
                print(json.dumps(audit_to_json(got), indent=2, ensure_ascii=False))
            else:
                print("\n".join([f"{host.name}: disk audit", *audit_lines(got)]))
            return EXIT_OK
        got, plan = call.on_host(check)
        t = plan.target
        print(f"{host.name}: delete {printable(t.path)} ({fmt_bytes(t.bytes)}): {plan.why}")
        if args.confirm is None and not sys.stdin.isatty():
            # Only now, checked: --confirm is never suggested for a path that is refused.
            return call.fail(
                "stdin is not a terminal, so no one can type the confirmation",
                fix=f"pass --confirm {shlex.quote(printable(t.path))} (the full path) to delete it",
                code=EXIT_BAD_INPUT,
            )
        if args.confirm is not None:  # a script repeats the full path, never a short name
            confirmed = args.confirm == t.path
        else:
            # "(or the full path)" only where the short name is another text (s38 disk
            # hour #8 read "Type '/x/y' (or the full path)").
            other = " (or the full path)" if t.short != t.path else ""
            typed = ask(f"Type {printable(t.short)!r}{other} to delete it: ")
            confirmed = typed in (t.path, t.short)
        if not confirmed:
            return call.fail("not confirmed: what was typed is not the path; nothing deleted")

        async def delete(transport: Transport) -> str:
            # Checked again now: the box may have changed while the question waited.
            again = await plan_delete(host, transport, results, got, t.path)
            return await delete_planned(transport, again)

        print(call.on_host(delete))
        return EXIT_OK
    except DiskError as exc:
        for line in exc.lost:
            call.err.print(f"  would lose: {line}", markup=False, highlight=False)
        return call.fail(printable(exc.message, 2000), code=EXIT_PROBLEMS)
