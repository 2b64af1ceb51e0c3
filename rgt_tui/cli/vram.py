"""`rgt-tui vram HOST [--kill PID]`: who holds HOST's VRAM, and reclaiming it (U11, GEN7).

The twin of the GPU tab's VRAM holders and its ``x`` dialog. Without ``--kill`` it prints
the evidence (nvidia-smi's compute processes, the ``/dev/nvidia*`` holders, why the
container hides PIDs). With ``--kill PID`` it asks for the PID typed again (``--yes`` off a
terminal), kills on a fresh connection, and looks again on a third: a kill may take the
SSH session down with it (U1), and the answer that counts is the list after.
"""

from __future__ import annotations

import argparse
import json

from rgt_tui.cli.exit_codes import EXIT_OK, EXIT_PROBLEMS
from rgt_tui.cli.prompt import confirmed
from rgt_tui.cli.runner import Call
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.units import fmt_bytes, fmt_duration
from rgt_tui.services.box.vram import (
    VramError,
    VramEvidence,
    VramProcess,
    check_kill,
    kill_outcome,
    kill_vram_holder,
    read_vram_evidence,
)


def add_vram_arguments(parser: argparse.ArgumentParser) -> None:
    """``--kill PID``, ``--yes`` and ``--json``."""
    parser.add_argument(
        "--kill",
        type=int,
        metavar="PID",
        help="SIGTERM (then SIGKILL after 10 s) a /dev/nvidia* holder from the list",
    )
    parser.add_argument("--yes", action="store_true", help="kill without asking (no terminal)")
    parser.add_argument("--json", action="store_true", help="print the evidence as JSON")


def process_line(p: VramProcess, evidence: VramEvidence) -> str:
    """One process of the evidence as a table row."""
    vram = "-" if p.smi_mib is None else fmt_bytes(p.smi_mib * 2**20)
    gpu = "-" if p.gpu_index is None else str(p.gpu_index)
    devices = " ".join(d.rsplit("/", 1)[-1] for d in p.devices) or "-"
    where = evidence.command_of(p)
    age = fmt_duration(p.age_s) if p.age_s is not None else "-"
    return (
        f"  {p.pid:<8} {gpu:<4}{vram:>7}  {devices[:28]:<28} {p.state or '-':<2} {age:>6} "
        f"{p.cell or '-':<12} {where}"
    )


def format_evidence(evidence: VramEvidence) -> str:
    """The evidence as text: the GPUs, why PIDs are hidden, the processes, how to kill."""
    host = evidence.host
    if evidence.no_gpu:
        return evidence.no_gpu
    lines = []
    if evidence.smi == "ok":
        for g in evidence.gpus:
            used = "?" if g.used_mib is None else f"{g.used_mib:,} MiB"
            util = "?" if g.util_pct is None else f"{g.util_pct:.0f}%"
            lines.append(f"{host}: GPU{g.index} {used} in use, util {util}")
    else:
        lines.append(f"{host}: nvidia-smi {evidence.smi}: {evidence.smi_detail}")
    if evidence.walk != "ok":
        lines.append("no /dev/nvidia* holders listed: `find` is missing on the box")
    if evidence.hidden_reason:
        lines.append(evidence.hidden_reason)
    if not evidence.processes:
        lines.append(evidence.nothing_held)
        return "\n".join(lines)
    lines.append(
        f"  {'PID':<8} {'GPU':<4}{'VRAM':>7}  {'DEVICES HELD':<28} {'ST':<2} {'AGE':>6} "
        f"{'CELL':<12} COMMAND"
    )
    lines += [process_line(p, evidence) for p in evidence.processes]
    if evidence.holders:
        lines.append(f"kill one: rgt-tui vram {host} --kill PID")
    return "\n".join(lines)


def run_vram(call: Call) -> int:
    """List HOST's VRAM holders; with ``--kill``, ask, kill, then look again."""
    args, host = call.args, call.host
    try:
        evidence = call.on_host(lambda t: read_vram_evidence(host.name, t))
    except VramError as exc:
        return call.fail(str(exc))
    if args.json and args.kill is None:
        print(json.dumps(evidence.to_json(), indent=2))
        return EXIT_OK
    if not args.json and not (args.kill is not None and evidence.no_gpu):
        # (With --kill on a box with no GPU, the refusal below says it: once, h555 #6.)
        print(format_evidence(evidence))
    if args.kill is None:
        return EXIT_OK
    pid = args.kill
    try:
        process = check_kill(evidence, pid)
    except VramError as exc:
        return call.fail(str(exc))
    what = process.cmdline or process.comm or "?"
    question = f"Kill pid {pid} ({what[:60]}) on {host.name}? Type the pid to confirm: "
    declined = confirmed(call, question, verb="kill", declined="not killed", typed=str(pid))
    if declined is not None:
        return declined
    try:
        result = call.on_host(lambda t: kill_vram_holder(evidence, t, pid))
    except VramError as exc:
        return call.fail(str(exc))
    # A separate call: the kill's own session may be gone with the process (U1).
    try:
        after = call.on_host(lambda t: read_vram_evidence(host.name, t))
    except (VramError, TransportError):
        after = None
    line = kill_outcome(result, after)
    if args.json:
        print(json.dumps({"kill": line, "after": after.to_json() if after else None}, indent=2))
    else:
        print(line)
    still = after.find(pid) if after is not None else None
    gone = after is not None and (still is None or not still.devices)
    return EXIT_OK if gone else EXIT_PROBLEMS
