"""A group's preflight (issue 41; the first-move checklist of MN1-MN4): every box's own
checks taken together, and the checks only a group has, each by name with its fix.

``box_checks`` folds every rank's single-box report into one check per name, naming the
box that failed it; ``same_code`` and ``same_stack`` compare the boxes' code tree hash and
torch/CUDA build; ``rendezvous`` reads rank 0's one-shot listener and the other ranks'
connection attempts; ``clocks`` compares the boxes' clocks. The network checks (``nic``,
``mtu``) and the fabric manager (``fabric``) are ``preflight_net``'s. Pure: the answers
are given, already read from the boxes (hostile text, cut and made printable here).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rgt_tui.domain.preflight import Check, PreflightReport, clip

EMPTY_TREE = hashlib.sha256(b"").hexdigest()  # the tree hash of a box holding none of it
CLOCK_SKEW_S = 1.0  # log timestamps across ranks line up within a second


def box_checks(whos: Sequence[str], reports: Sequence[PreflightReport | None]) -> tuple[Check, ...]:
    """One check per name of the boxes' own preflight: passed when it passed on every
    box; a failure names each box that failed it with what it saw, and its fix. A box
    whose report is None (its preflight did not run) is named as not checked: "every
    box" was said over the boxes that answered alone (h617 #2)."""
    names: list[str] = []
    for report in reports:
        names += [c.name for c in report.checks if c.name not in names] if report else []
    unchecked = [who for who, r in zip(whos, reports, strict=True) if r is None]
    out = []
    for name in names:
        seen = [(who, r.check(name)) for who, r in zip(whos, reports, strict=True) if r is not None]
        failed = [(who, c) for who, c in seen if c is not None and not c.ok]
        if not failed:
            details = {c.detail for _, c in seen if c is not None}
            first = next(c for _, c in seen if c is not None)
            detail = (
                f"every box: {first.detail}"
                if len(details) == 1 and not unchecked
                else "; ".join(f"{who}: {c.detail}" for who, c in seen if c is not None)
            )
            if unchecked:
                detail += f"; not checked on {', '.join(unchecked)} (its preflight did not run)"
            ran = all(c.ran for _, c in seen if c is not None)
            out.append(Check(name, True, detail, ran=ran))
            continue
        fixes = dict.fromkeys(c.fix for _, c in failed if c.fix)
        out.append(
            Check(
                name,
                False,
                "; ".join(f"{who}: {c.detail}" for who, c in failed),
                " / ".join(fixes),
            )
        )
    return tuple(out)


def same_code(whos: Sequence[str], reports: Sequence[PreflightReport], has_code: bool) -> Check:
    """Every box holds the same code tree (its hash, U42): one box left behind by a sync
    runs other code under the same job, and the ranks disagree in ways no log shows."""
    if not has_code:
        return Check(
            "same-code",
            True,
            'not compared: the group has no code key (set code = "~/project" and every '
            "box's tree hash is compared)",
        )
    trees = [r.code.tree if r.code is not None else None for r in reports]
    unknown = [who for who, t in zip(whos, trees, strict=True) if t is None]
    if unknown:
        return Check(
            "same-code",
            False,
            f"the tree hash of {', '.join(unknown)} could not be read",
            "see its code check; rgt-tui sync GROUP pushes the same tree to every box",
        )
    if len(set(trees)) == 1 and trees[0] == EMPTY_TREE:
        # No box holds a file of the code yet: "every box holds tree e3b0c44298fc" (the
        # hash of nothing) read as passed while code failed on both (hour s18b #13).
        return Check(
            "same-code",
            True,
            "not compared: no box holds the code yet (see the code check; rgt-tui sync "
            "GROUP pushes it to every box)",
            ran=False,
        )
    if len(set(trees)) == 1:
        return Check("same-code", True, f"every box holds tree {trees[0][:12]}")  # type: ignore[index]
    lead = trees[0]
    odd = [f"{who} holds {t[:12]}" for who, t in zip(whos, trees, strict=True) if t != lead]  # type: ignore[index]
    return Check(
        "same-code",
        False,
        f"the boxes hold different code: {whos[0]} holds {lead[:12]}, " + ", ".join(odd),  # type: ignore[index]
        "rgt-tui sync GROUP (it pushes the same tree to every box), then preflight again",
    )


_TORCH_RE = re.compile(r"^torch (\S+) \((?:CUDA (\S+) build|(CPU-only) build)\)")


def stack_of(report: PreflightReport) -> tuple[str, str] | None:
    """``(torch version, CUDA build or "CPU")`` from the box's passed torch check (its
    detail is ``preflight_checks.check_torch``'s), None when torch did not import."""
    check = report.check("torch")
    if check is None or not check.ok:
        return None
    m = _TORCH_RE.match(check.detail)
    if m is None:
        return None
    return m.group(1), (m.group(2) or "CPU")


def same_stack(whos: Sequence[str], reports: Sequence[PreflightReport]) -> Check:
    """The same torch and CUDA build on every box: a version skew changes the collective's
    wire format or its defaults, and the job hangs or diverges at the first all-reduce."""
    stacks = [stack_of(r) for r in reports]
    known = [(who, s) for who, s in zip(whos, stacks, strict=True) if s is not None]
    missing = [who for who, s in zip(whos, stacks, strict=True) if s is None]
    kinds = {s for _, s in known}
    if len(kinds) > 1:
        shown = ", ".join(f"{who} torch {s[0]} ({_cuda(s[1])})" for who, s in known)
        lead = known[0][1]
        return Check(
            "same-stack",
            False,
            f"the boxes run different stacks: {shown}",
            f"install torch {lead[0]} ({_cuda(lead[1])}) on every box, in the run's "
            "environment, so every rank runs the same build",
        )
    if missing:
        text = f"not compared on {', '.join(missing)} (its torch check failed)"
        if known:
            text = f"torch {known[0][1][0]} ({_cuda(known[0][1][1])}) on the others; " + text
        return Check("same-stack", True, text)
    s = known[0][1]
    return Check("same-stack", True, f"every box: torch {s[0]} ({_cuda(s[1])})")


def _cuda(build: str) -> str:
    return "CPU-only" if build == "CPU" else f"CUDA {build}"


@dataclass(frozen=True)
class ClockReading:
    """One box's clock against this machine's: ``offset_s`` = the box's time minus the
    midpoint of the SSH round trip that read it; ``error_s`` = half that round trip (how
    far off the estimate can be). None offset: the box did not answer a time."""

    offset_s: float | None
    error_s: float = 0.0


def clocks(whos: Sequence[str], readings: Sequence[ClockReading]) -> Check:
    """The boxes' clocks within a second of each other (each read corrected by its SSH
    round trip/2), so every rank's log timestamps line up when a dead rank is traced."""
    known = [(who, r) for who, r in zip(whos, readings, strict=True) if r.offset_s is not None]
    missing = [who for who, r in zip(whos, readings, strict=True) if r.offset_s is None]
    if len(known) < 2:
        return Check("clocks", True, "not compared: fewer than two boxes told their time")
    early = min(known, key=lambda k: k[1].offset_s or 0.0)
    late = max(known, key=lambda k: k[1].offset_s or 0.0)
    skew = (late[1].offset_s or 0.0) - (early[1].offset_s or 0.0)
    slack = late[1].error_s + early[1].error_s
    said = f"{skew:.2f} s apart (±{slack:.2f} s from the SSH round trips)"
    if skew - slack > CLOCK_SKEW_S:
        return Check(
            "clocks",
            False,
            f"{late[0]}'s clock is {said} ahead of {early[0]}'s: the ranks' log lines will "
            "not line up",
            f"sync the clocks: `timedatectl set-ntp true` (or chronyd/ntpd) on {late[0]} "
            f"and {early[0]}",
        )
    tail = f"; {', '.join(missing)} did not tell its time" if missing else ""
    return Check("clocks", True, f"within {CLOCK_SKEW_S:.0f} s: at most {said}{tail}")


# -- rendezvous --------------------------------------------------------------------------


@dataclass(frozen=True)
class ListenAnswer:
    """What rank 0's one-shot listener said: whether it could listen on master_addr:port
    (``error``: why not: ``errno``'s name, e.g. EADDRINUSE, and its text), how many ranks
    reached it, and rank 0's IPv4 addresses (``ip -4 addr``: candidates for the fix)."""

    bound: bool
    errno_name: str = ""
    error: str = ""
    accepted: int = 0
    addresses: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConnectAnswer:
    """What one other rank's connection attempt said: reached rank 0's listener, or why
    not (refused, timeout, resolve, other: something else answers there)."""

    reached: bool
    why: str = ""
    error: str = ""


def rendezvous(
    whos: Sequence[str],
    addr: str,
    port: int,
    listen: ListenAnswer | None,
    connects: Sequence[ConnectAnswer | None],
    running: str = "",
) -> Check:
    """master_addr:master_port is where rank 0 can listen and every other box reaches
    it. A rented box's SSH address is often a NAT'd public port: rank 0 cannot listen on
    it, or the others cannot reach it, and torchrun's rendezvous waits until its
    timeout. ``listen``/``connects`` None: that box did not answer (named).

    ``running``: the group's own cell running now on rank 0 (``pair's cell `long```; ""
    when none). Its torchrun holds the port (a job runs only once its rendezvous store
    is up there), so a port in use is the job's own, not a problem to end (ux-h #7): the
    check passes, saying it was not tested."""
    where = f"{addr}:{port}"
    if running and listen is not None and listen.errno_name == "EADDRINUSE":
        return Check(
            "rendezvous",
            True,
            f"not tested: {running} is running, and its torchrun holds {where} on "
            f"{whos[0]}; preflight again once it ends",
        )
    candidates = listen.addresses if listen is not None else ()
    private = (
        f"set master_addr to rank 0's private address ({', '.join(candidates)}: `ip -4 addr` "
        f"on {whos[0]})"
        if candidates
        else f"set master_addr to rank 0's private address (`ip -4 addr` on {whos[0]} lists them)"
    )
    problems: list[str] = []
    fix = ""  # the network's fix, when the network is what failed
    silent: list[str] = []  # boxes that did not answer: no fact about master_addr
    certain = False  # rank 0 holds no such address: no torchrun can listen there
    if listen is None:
        problems.append(f"{whos[0]} did not answer the listener check")
        silent.append(whos[0])
    elif not listen.bound:
        if listen.errno_name == "EADDRINUSE":
            problems.append(
                f"{whos[0]} cannot listen on {where}: the port is already in use there "
                "(a torchrun left from an earlier run?)"
            )
            fix = f"end what holds port {port} on {whos[0]} (`ss -ltnp 'sport = :{port}'`), or set another master_port"
        elif listen.errno_name in ("EADDRNOTAVAIL", "EAI"):
            certain = True
            fix = private
            problems.append(
                f"{addr} is not an address of {whos[0]} ({clip(listen.error, 120)}): the SSH "
                "address of a rented box is often a NAT'd public one"
            )
        else:
            fix = private
            problems.append(f"{whos[0]} cannot listen on {where}: {clip(listen.error, 120)}")
    missed = False  # refused where rank 0 listened: maybe its window, not the address
    for who, answer in zip(whos[1:], connects, strict=True):
        if answer is None:
            problems.append(f"{who} did not answer the connection check")
            silent.append(who)
        elif not answer.reached and answer.why == "refused" and listen and listen.bound:
            missed = True
            fix = fix or private
            problems.append(
                f"{who} cannot reach {where}: connection refused, though {whos[0]} listened there"
            )
        elif not answer.reached:
            fix = fix or private
            why = {
                "refused": "connection refused",
                "timeout": "timed out (a firewall, or a NAT'd address?)",
                "resolve": f"the name does not resolve there ({clip(answer.error, 80)})",
                "other": "something else answers there, not rank 0's listener",
            }.get(answer.why, clip(answer.error or answer.why, 120))
            problems.append(f"{who} cannot reach {where}: {why}")
    if problems:
        if missed:
            # h617 #3: a dial that came after rank 0's listener ended (a box slow to log
            # in) reads the same as an address that leads elsewhere: both are named.
            fix = (
                f"if {addr} leads the other boxes elsewhere, {fix}; if a box is slow to log "
                f"in, its dial may have come after {whos[0]} stopped listening: preflight again"
            )
        # A box that did not answer says nothing of master_addr (h617 #2: the fix told to
        # change it for a box that was down): check that box first.
        if silent:
            fix = " / ".join(
                f
                for f in (
                    fix,
                    f"check {', '.join(silent)}, which did not answer, then preflight again",
                )
                if f
            )
        return Check("rendezvous", False, "; ".join(problems), fix, certain=certain)
    return Check(
        "rendezvous",
        True,
        f"{whos[0]} listened on {where} and every other box reached it",
    )
