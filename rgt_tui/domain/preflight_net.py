"""A group's network and fabric checks (issue 41): ``nic`` (MN2), ``mtu`` (MN4) and
``fabric`` (MN1), from what each box's ``ip``, ``ping``, ``nvidia-smi -q`` and
``systemctl`` printed (``parse_net``: the box script's ``key<TAB>value`` lines).

Pure: every function takes the commands' own output, hostile text, so a recording of a
real box (tests/fixtures/gpu, tests/fixtures/net) is replayed as it was printed.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rgt_tui.domain.preflight import Check, clip
from rgt_tui.domain.text import is_digits
from rgt_tui.domain.units import plural

# What NCCL must not carry inter-node traffic over (MN2): a bridge no other box routes
# to, or the loopback.
BAD_NICS = ("docker*", "lo", "virbr*", "br-*")


@dataclass(frozen=True)
class NetFacts:
    """One box's answers: the route to master_addr (``ip route get``), each interface's
    MTU (``ip -o link``), its IPv4 addresses (``ip -o -4 addr``: name, address), the path
    MTU probe (``ping -M do``: size, its exit, a small ping's exit, its last line) and the fabric manager's state."""

    route: str = ""
    mtus: tuple[tuple[str, int], ...] = ()
    addrs: tuple[tuple[str, str], ...] = ()
    ping: tuple[int, int, int, str] | None = None
    smi: bool = False  # nvidia-smi exists on the box
    smi_q: str = ""  # nvidia-smi -q
    fm_status: str = ""  # systemctl status nvidia-fabricmanager
    ended: bool = False

    def mtu(self, dev: str) -> int | None:
        """The MTU of interface ``dev``, None when ``ip link`` did not list it."""
        return next((m for name, m in self.mtus if name == dev), None)


_LINK_RE = re.compile(r"^\d+:\s+([^:@\s]+)(?:@\S+)?:\s.*?\bmtu (\d+)")
_ADDR_RE = re.compile(r"^\d+:\s+(\S+)\s+inet\s+(\d+\.\d+\.\d+\.\d+)")


def parse_net(text: str) -> NetFacts:
    """The box script's lines as facts (unknown keys and malformed values skipped)."""
    route: list[str] = []
    mtus: list[tuple[str, int]] = []
    addrs: list[tuple[str, str]] = []
    smi_q: list[str] = []
    fm: list[str] = []
    ping = None
    smi = ended = False
    for line in text.splitlines():
        key, _, value = line.partition("\t")
        if key == "route":
            route.append(value)
        elif key == "link" and (m := _LINK_RE.match(value)):
            mtus.append((clip(m.group(1), 32), int(m.group(2)[:7])))
        elif key == "addr" and (m := _ADDR_RE.match(value)):
            addrs.append((clip(m.group(1), 32), m.group(2)))
        elif key == "ping":
            parts = (value.split("\t", 3) + ["", "", "", ""])[:4]
            if all(is_digits(p) for p in parts[:3]):
                ping = (
                    int(parts[0][:7]),
                    int(parts[1][:5]),
                    int(parts[2][:5]),
                    clip(parts[3], 200),
                )
        elif key == "smi":
            smi = value == "1"
        elif key == "q":
            smi_q.append(value)
        elif key == "fm":
            fm.append(value)
        elif key == "end":
            ended = value == "1"
    return NetFacts(
        route="\n".join(route[:4]), mtus=tuple(mtus[:256]), addrs=tuple(addrs[:64]),
        ping=ping, smi=smi, smi_q="\n".join(smi_q), fm_status="\n".join(fm[:40]), ended=ended,
    )  # fmt: skip


def route_dev(ip_route_get: str) -> str | None:
    """The interface ``ip route get ADDR`` says the route goes out of (``dev X``)."""
    m = re.search(r"\bdev (\S+)", ip_route_get)
    return clip(m.group(1), 32) if m else None


def nic_of(facts: NetFacts, addr: str) -> str | None:
    """The interface a box reaches ``addr`` through: the one holding it when the box owns
    the address (rank 0: ``ip route get`` of its own address says ``lo``, but NCCL listens
    on the interface that has it), else the route's."""
    owner = next((name for name, a in facts.addrs if a == addr), None)
    if owner is not None and not addr.startswith("127."):
        return owner
    return route_dev(facts.route)


def _matches(ifname: str, dev: str) -> bool:
    """Whether NCCL_SOCKET_IFNAME ``ifname`` lets NCCL use ``dev`` (prefixes; ``=`` exact;
    ``^`` excludes)."""
    exclude = ifname.startswith("^")
    body = ifname.lstrip("^")
    exact = body.startswith("=")
    names = body.lstrip("=").split(",")
    hit = any(dev == n if exact else dev.startswith(n) for n in names if n)
    return not hit if exclude else hit


def _bad(dev: str) -> bool:
    return any(fnmatch.fnmatchcase(dev, pattern) for pattern in BAD_NICS)


def nic(
    whos: Sequence[str], facts: Sequence[NetFacts | None], addr: str, ifname: str | None
) -> Check:
    """The NIC each box reaches master_addr through (MN2): refused when it is a bridge or
    the loopback (docker0, lo, virbr*, br-*) that ``nccl_socket_ifname`` does not name, or
    when ``nccl_socket_ifname`` would keep NCCL off the interface that route uses."""
    devs = [
        (who, nic_of(f, addr) if f is not None else None)
        for who, f in zip(whos, facts, strict=True)
    ]
    unknown = [who for who, d in devs if d is None]
    problems = []
    for who, dev in devs:
        if dev is None:
            continue
        if ifname is not None and not _matches(ifname, dev):
            problems.append(
                f"{who} reaches {addr} through {dev}, which nccl_socket_ifname = "
                f"{ifname!r} keeps NCCL off"
            )
        elif ifname is None and _bad(dev):
            problems.append(
                f"{who} reaches {addr} through {dev}, a bridge or loopback: NCCL would "
                "carry the job over it, not over the boxes' network"
            )
    shown = ", ".join(f"{who} {d}" for who, d in devs if d is not None)
    if problems:
        wanted = ",".join(sorted({d for _, d in devs if d is not None}))
        if ifname is None:  # a bridge or the loopback: the address is what is wrong
            fix = (
                "set master_addr to an address on the boxes' data-plane network; only if "
                f"the boxes really share {wanted} (one machine, a test), say so: "
                f'nccl_socket_ifname = "{wanted}" in the group'
            )
        else:
            fix = (
                f'set nccl_socket_ifname = "{wanted}" in the group (the interface each box '
                "reaches master_addr through), or set master_addr to an address on the "
                "boxes' data-plane network"
            )
        return Check("nic", False, "; ".join(problems), fix)
    tail = f"; not seen on {', '.join(unknown)} (no `ip` there?)" if unknown else ""
    pinned = f" (nccl_socket_ifname {ifname!r})" if ifname else ""
    return Check("nic", True, f"{shown}{pinned}{tail}" if shown else f"not seen{tail}")


def mtu(whos: Sequence[str], facts: Sequence[NetFacts | None], addr: str) -> Check:
    """The MTU of the interface each box reaches master_addr through, the same on every
    box (MN4), and, where ``ping -M do`` ran, a full-size frame got through unfragmented:
    a mismatch drops large NCCL frames silently while small ones pass."""
    seen: list[tuple[str, str, int]] = []
    problems: list[str] = []
    for who, f in zip(whos, facts, strict=True):
        if f is None:
            continue
        dev = nic_of(f, addr)
        size = f.mtu(dev) if dev else None
        if dev and size:
            seen.append((who, dev, size))
        # MN4's signature: a small ping gets through, a full-size one does not.
        if f.ping is not None and f.ping[2] == 0 and f.ping[1] != 0:
            problems.append(
                f"{who}: a {f.ping[0]}-byte ping to {addr} with don't-fragment failed "
                f"({f.ping[3] or f'exit {f.ping[1]}'}) while a small one got through: large "
                "frames are dropped on the way"
            )
    sizes = {s for _, _, s in seen}
    shown = ", ".join(f"{who} {dev} {s}" for who, dev, s in seen)
    if len(sizes) > 1:
        problems.insert(0, f"the MTUs differ: {shown}")
    if problems:
        low = min(sizes) if sizes else 1500
        return Check(
            "mtu",
            False,
            "; ".join(problems),
            f"set the same MTU on every box's interface (`ip link set dev IF mtu {low}`; a "
            "uniform smaller MTU works, a mismatch does not)",
        )
    return Check("mtu", True, f"the same on every box: {shown}" if shown else "not seen")


# -- fabric (MN1) --------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuFabric:
    """One GPU's ``Fabric`` section of ``nvidia-smi -q``."""

    gpu: str
    state: str
    status: str
    health: str = ""


_GPU_RE = re.compile(r"^GPU ([0-9A-Fa-f:.]+)\s*$")
_FIELD_RE = re.compile(r"^\s*([A-Za-z][A-Za-z ]*?)\s*:\s*(.*?)\s*$")


def parse_fabric(smi_q: str) -> tuple[GpuFabric, ...]:
    """Each GPU's fabric state, status and health summary from ``nvidia-smi -q`` (or a
    grep of it: a Fabric block before any ``GPU`` line belongs to "GPU ?")."""
    out: list[GpuFabric] = []
    gpu = "?"
    in_fabric = False
    indent = 0
    fields: dict[str, str] = {}

    def close() -> None:
        if fields:
            out.append(
                GpuFabric(
                    gpu,
                    fields.get("State", ""),
                    fields.get("Status", ""),
                    fields.get("Summary", ""),
                )
            )
        fields.clear()

    for raw in smi_q.splitlines()[:20000]:
        line = raw.rstrip()
        m = _GPU_RE.match(line)
        if m:
            close()
            in_fabric = False
            gpu = clip(m.group(1), 20)
            continue
        stripped = line.strip()
        depth = len(line) - len(line.lstrip())
        if stripped == "Fabric":
            close()
            in_fabric, indent = True, depth
            continue
        if in_fabric:
            if stripped and depth <= indent:
                close()
                in_fabric = False
                continue
            f = _FIELD_RE.match(line)
            if f and f.group(1) in ("State", "Status", "Summary"):
                fields.setdefault(f.group(1), clip(f.group(2), 40))
    close()
    return tuple(out[:64])


_UNSUPPORTED = ("", "N/A", "Not Supported")


def fabric_problems(facts: NetFacts) -> tuple[list[str], str]:
    """What is wrong with one box's NVLink fabric registration (MN1), and what its fabric
    manager service said (``Active: …``, "" when systemctl told nothing)."""
    m = re.search(r"^\s*Active:\s*(.+?)\s*$", facts.fm_status, re.M)
    service = clip(m.group(1), 80) if m else ""
    problems = []
    for g in parse_fabric(facts.smi_q):
        if g.state in _UNSUPPORTED:
            continue  # no NVSwitch fabric (PCIe cards, a single GPU)
        if g.state != "Completed":
            problems.append(f"GPU {g.gpu} fabric state {g.state!r}")
        elif g.status != "Success":
            problems.append(f"GPU {g.gpu} fabric status {g.status!r}")
        elif g.health == "Unhealthy":
            problems.append(f"GPU {g.gpu} fabric health Unhealthy")
    if not problems and service.startswith("failed"):
        problems.append(f"nvidia-fabricmanager is {service}")
    return problems, service


def fabric(whos: Sequence[str], facts: Sequence[NetFacts | None]) -> Check:
    """The fabric manager where the GPUs need one (MN1): an NVSwitch GPU whose fabric
    registration is not ``Completed``/``Success`` on one box hangs every rank at NCCL
    init. Boxes without NVIDIA's driver, or whose GPUs report no fabric, pass."""
    problems: list[str] = []
    ok: list[str] = []
    for who, f in zip(whos, facts, strict=True):
        if f is None:
            continue
        if not f.smi:
            ok.append(f"{who}: no nvidia-smi (no NVSwitch fabric to check)")
            continue
        found, service = fabric_problems(f)
        said = f" (nvidia-fabricmanager: {service})" if service else ""
        if found:
            shown = ", ".join(found[:4]) + (f" and {len(found) - 4} more" if len(found) > 4 else "")
            problems.append(f"{who}: {shown}{said}")
        else:
            registered = [g for g in parse_fabric(f.smi_q) if g.state == "Completed"]
            ok.append(
                f"{who}: {plural(len(registered), 'GPU')} registered with the fabric{said}"
                if registered
                else f"{who}: no NVSwitch fabric reported{said}"
            )
    if problems:
        return Check(
            "fabric",
            False,
            "; ".join(problems) + " — NCCL init hangs on every rank until it is fixed",
            "`systemctl restart nvidia-fabricmanager` on that box if you may (its version "
            "must match the driver's), else stop it and rent another box",
        )
    return Check("fabric", True, "; ".join(ok) if ok else "not seen")
