"""The group preflight's rules (issue 41; domain.preflight_group, domain.preflight_net),
fed the real output of ``ip``, ``nvidia-smi -q`` and ``systemctl`` recorded in
tests/fixtures/net and tests/fixtures/gpu (see their SOURCES.txt): no GPU, docker bridge
or second network exists where the tests run."""

from __future__ import annotations

from pathlib import Path

from rgt_tui.domain import preflight_group as rules
from rgt_tui.domain import preflight_net as net
from rgt_tui.domain.code_identity import CodeIdentity
from rgt_tui.domain.config import PREFLIGHT_CHECKS
from rgt_tui.domain.preflight import Check, PreflightReport

FIXTURES = Path(__file__).parents[1] / "fixtures"
WHOS = ["rank 0 (box1)", "rank 1 (box2)"]


def recorded(path: str) -> str:
    return (FIXTURES / path).read_text()


def facts(route: str, *, mtu: int = 1500, smi_q: str | None = None, fm: str = "") -> net.NetFacts:
    """A box's facts around a recorded ``ip route get`` answer."""
    dev = net.route_dev(route) or "eth0"
    return net.NetFacts(
        route=route, mtus=((dev, mtu),), smi=smi_q is not None, smi_q=smi_q or "", fm_status=fm
    )


def test_the_group_checks_are_acknowledgeable_by_name() -> None:
    for name in ("same-code", "same-stack", "rendezvous", "nic", "mtu", "fabric", "clocks"):
        assert name in PREFLIGHT_CHECKS


# -- nic (MN2) ---------------------------------------------------------------------------


def test_a_route_out_of_docker0_is_refused_and_the_fix_names_the_interface() -> None:
    docker = recorded("net/ip_route_get_docker0.txt")
    assert net.route_dev(docker) == "docker0"
    check = net.nic(WHOS, [facts(docker), facts(docker)], "172.17.0.2", None)
    assert not check.ok
    assert "rank 1 (box2) reaches 172.17.0.2 through docker0" in check.detail
    assert 'nccl_socket_ifname = "docker0"' in check.fix
    # The address is what is wrong: that first, the interface only as a knowing choice
    # (it said "must not carry the job", then told the user to name it).
    assert check.fix.startswith("set master_addr to an address on the boxes' data-plane")
    assert "only if the boxes really share docker0 (one machine, a test)" in check.fix


def test_the_loopback_passes_only_when_nccl_socket_ifname_names_it() -> None:
    lo = recorded("net/ip_route_get_lo.txt")
    boxes = [facts(lo), facts(lo)]
    assert not net.nic(WHOS, boxes, "127.0.0.1", None).ok
    assert net.nic(WHOS, boxes, "127.0.0.1", "lo").ok
    # An ifname that keeps NCCL off the interface the route uses is refused too.
    wrong = net.nic(WHOS, boxes, "127.0.0.1", "eth")
    assert not wrong.ok and "keeps NCCL off" in wrong.detail


def test_parse_net_reads_the_box_script_lines() -> None:
    text = (
        "route\t10.0.0.5 dev ens5 src 10.0.0.7 uid 0 \n"
        "link\t2: ens5: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9001 qdisc mq state UP\n"
        "addr\t2: ens5    inet 10.0.0.7/24 brd 10.0.0.255 scope global ens5\n"
        "ping\t8973\t1\t0\tping: local error: message too long, mtu=1500\n"
        "end\t1\n"
    )
    got = net.parse_net(text)
    assert got.ended and net.route_dev(got.route) == "ens5" and got.mtu("ens5") == 9001
    assert got.addrs == (("ens5", "10.0.0.7"),)
    assert got.ping == (8973, 1, 0, "ping: local error: message too long, mtu=1500")


# -- mtu (MN4) ---------------------------------------------------------------------------


def test_an_mtu_mismatch_is_named_with_each_box() -> None:
    route = "10.0.0.5 dev eth0 src 10.0.0.7 uid 0"
    check = net.mtu(WHOS, [facts(route, mtu=9000), facts(route, mtu=1500)], "10.0.0.5")
    assert not check.ok
    assert "rank 0 (box1) eth0 9000" in check.detail and "rank 1 (box2) eth0 1500" in check.detail
    assert "mtu 1500" in check.fix
    assert net.mtu(WHOS, [facts(route), facts(route)], "10.0.0.5").ok


def test_a_dropped_full_size_frame_fails_mtu_but_blocked_icmp_does_not() -> None:
    route = "10.0.0.5 dev eth0 src 10.0.0.7 uid 0"
    dropped = net.NetFacts(
        route=route, mtus=(("eth0", 9000),), ping=(8972, 1, 0, "100% packet loss")
    )
    blocked = net.NetFacts(
        route=route, mtus=(("eth0", 9000),), ping=(8972, 1, 1, "100% packet loss")
    )
    lead = facts(route, mtu=9000)
    assert not net.mtu(WHOS, [lead, dropped], "10.0.0.5").ok
    assert net.mtu(WHOS, [lead, blocked], "10.0.0.5").ok


# -- fabric (MN1) ------------------------------------------------------------------------


def test_fabric_registration_in_progress_fails_naming_the_box() -> None:
    route = "10.0.0.5 dev eth0"
    sick = facts(route, smi_q=recorded("gpu/smi_q_fabric_in_progress.txt"))
    check = net.fabric(WHOS, [facts(route), sick])
    assert not check.ok
    assert "rank 1 (box2)" in check.detail and "'In Progress'" in check.detail
    assert "rank 0 (box1)" not in check.detail
    assert "nvidia-fabricmanager" in check.fix


def test_fabric_status_and_health_failures_from_the_recordings() -> None:
    route = "10.0.0.5 dev eth0"
    for name, said in (
        ("gpu/smi_q_fabric_insufficient_resources.txt", "'Insufficient Resources'"),
        ("gpu/smi_q_fabric_completed_unhealthy.txt", "health Unhealthy"),
    ):
        check = net.fabric(WHOS, [facts(route, smi_q=recorded(name)), facts(route)])
        assert not check.ok and said in check.detail, name


def test_no_driver_or_no_fabric_passes_and_the_service_is_said() -> None:
    route = "10.0.0.5 dev eth0"
    running = recorded("gpu/systemctl_fabricmanager_active.txt")
    check = net.fabric(WHOS, [facts(route), facts(route, smi_q="", fm=running)])
    assert check.ok
    assert "no nvidia-smi" in check.detail and "active (running)" in check.detail


# -- clocks ------------------------------------------------------------------------------


def test_an_injected_clock_skew_fails_and_names_both_boxes() -> None:
    skewed = [rules.ClockReading(0.02, 0.01), rules.ClockReading(5.02, 0.01)]
    check = rules.clocks(WHOS, skewed)
    assert not check.ok
    assert "rank 1 (box2)'s clock is 5.00 s apart" in check.detail
    assert "rank 0 (box1)" in check.fix
    assert rules.clocks(WHOS, [rules.ClockReading(0.0, 0.01), rules.ClockReading(0.3, 0.01)]).ok
    # A slow round trip cannot prove a skew its own error could explain.
    assert rules.clocks(WHOS, [rules.ClockReading(0.0, 0.8), rules.ClockReading(2.0, 0.8)]).ok


# -- the boxes' own reports, code and stack ----------------------------------------------


def report(host: str, *checks: Check, tree: str = "a" * 64) -> PreflightReport:
    return PreflightReport(host, checks, CodeIdentity(tree))


def test_box_checks_fold_by_name_and_name_the_box_that_failed() -> None:
    one = report("g", Check("gpu", True, "8 GPUs"), Check("tmux", True, "tmux 3.3"))
    two = report(
        "g", Check("gpu", False, "no GPU seen", "attach the GPUs"), Check("tmux", True, "tmux 3.3")
    )
    got = {c.name: c for c in rules.box_checks(WHOS, [one, two])}
    assert not got["gpu"].ok
    assert got["gpu"].detail == "rank 1 (box2): no GPU seen" and got["gpu"].fix == "attach the GPUs"
    assert got["tmux"].ok and got["tmux"].detail == "every box: tmux 3.3"


def test_same_code_refuses_a_tree_that_differs_on_one_box() -> None:
    same = rules.same_code(WHOS, [report("g"), report("g")], True)
    assert same.ok
    differs = rules.same_code(WHOS, [report("g"), report("g", tree="b" * 64)], True)
    assert not differs.ok
    assert "rank 1 (box2) holds bbbbbbbbbbbb" in differs.detail and "rgt-tui sync" in differs.fix


def test_a_check_not_run_and_code_on_no_box_never_read_as_passed() -> None:
    """Hour s18b #5 and #13: "ok smoke every box: not run: …", and "ok same-code every box
    holds tree e3b0c44298fc" (the hash of nothing) while code failed on both boxes."""
    from rgt_tui.cli.preflight import format_report

    empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    missing = Check("code", False, "7 files missing", "rgt-tui sync g")
    one = report("g", missing, Check("smoke", True, "not run: a cell runs", ran=False), tree=empty)
    two = report("g", missing, Check("smoke", True, "not run: a cell runs", ran=False), tree=empty)
    smoke = {c.name: c for c in rules.box_checks(WHOS, [one, two])}["smoke"]
    assert not smoke.ran
    same = rules.same_code(WHOS, [one, two], True)
    assert not same.ran and "no box holds the code yet" in same.detail, same
    # One box's tree edited (code fails there): compared, and refused by name.
    differs = rules.same_code(WHOS, [report("g", missing), report("g", tree="b" * 64)], True)
    assert differs.ran and not differs.ok and "rank 1 (box2) holds bbbbbbbbbbbb" in differs.detail
    text = format_report(PreflightReport("g", (smoke, same)), ())
    assert "ok" not in text.split("g: preflight")[1].split(), text
    assert "  -       smoke" in text, text
    # Nothing failed, and nothing not run reads as passed in the last line either (s38
    # spot hour #4: "ready: every check passed" under "- smoke not run").
    assert text.splitlines()[-1] == (
        "ready: every check that ran passed (not run: smoke, same-code, as their lines say)"
    ), text


def test_same_stack_reads_the_torch_checks_of_every_box() -> None:
    from rgt_tui.domain.preflight import BoxFacts
    from rgt_tui.domain.preflight_checks import check_torch

    def torch(version: str, cuda: str | None) -> Check:
        # The torch check as preflight writes it (its success path reads only the facts).
        said = {"importable": True, "version": version, "cuda": cuda}
        return check_torch(BoxFacts(python={"version": "3.11"}, torch=said), None)  # type: ignore[arg-type]

    a = report("g", torch("2.4.1", "12.4"))
    b = report("g", torch("2.5.0", "12.4"))
    assert rules.stack_of(report("g", torch("2.4.1", None))) == ("2.4.1", "CPU")
    check = rules.same_stack(WHOS, [a, b])
    assert not check.ok and "rank 1 (box2) torch 2.5.0 (CUDA 12.4)" in check.detail
    assert rules.same_stack(WHOS, [a, a]).ok


# -- rendezvous --------------------------------------------------------------------------


def test_a_box_that_cannot_reach_master_addr_is_named_with_the_private_address_fix() -> None:
    listen = rules.ListenAnswer(True, accepted=0, addresses=("10.0.0.5",))
    check = rules.rendezvous(
        WHOS, "203.0.113.9", 29500, listen, [rules.ConnectAnswer(False, "timeout")]
    )
    assert not check.ok
    assert "rank 1 (box2) cannot reach 203.0.113.9:29500: timed out" in check.detail
    assert "private address (10.0.0.5" in check.fix


def test_a_master_addr_that_is_not_rank_0s_is_refused() -> None:
    listen = rules.ListenAnswer(False, "EADDRNOTAVAIL", "OSError: [Errno 99] Cannot assign")
    check = rules.rendezvous(
        WHOS, "203.0.113.9", 29500, listen, [rules.ConnectAnswer(False, "refused")]
    )
    assert not check.ok and "is not an address of rank 0 (box1)" in check.detail
    assert "ip -4 addr" in check.fix
    # Certain, not a doubt: no acknowledgement lets a launch go (hour s22b #2: --ack
    # rendezvous would have started a job that waits out torchrun's timeout on 2 boxes).
    from rgt_tui.services.queue.launch_preflight import (
        is_preflight_problem,
        preflight_problems,
        preflight_warnings,
    )

    report = PreflightReport("pair", (check,))
    assert report.unacknowledged(("rendezvous",)) == (check,)
    [problem] = preflight_problems(report, ("rendezvous",), ())
    assert problem.startswith("rendezvous failed: 203.0.113.9 is not an address of rank 0")
    assert problem.endswith("; no acknowledgement changes this")
    assert not is_preflight_problem(problem)  # no Acknowledge button offered for it
    assert preflight_warnings(report, ("rendezvous",), ()) == []
    # A box that cannot reach it is a doubt (a firewall may open): acknowledgeable.
    listened = rules.ListenAnswer(True)
    doubt = rules.rendezvous(
        WHOS, "10.0.0.1", 29500, listened, [rules.ConnectAnswer(False, "timeout")]
    )
    assert not doubt.ok and not doubt.certain


def test_a_box_that_did_not_answer_is_not_told_to_change_master_addr() -> None:
    """h617 #2: with box2 down, "rank 1 (box2) did not answer the connection check" came
    with "set master_addr to rank 0's private address", and the box checks said "every
    box" over box1's report alone."""
    listen = rules.ListenAnswer(True, addresses=("10.0.0.5",))
    check = rules.rendezvous(WHOS, "10.0.0.5", 29500, listen, [None])
    assert not check.ok
    assert check.fix == "check rank 1 (box2), which did not answer, then preflight again"
    # A network failure beside it keeps its own fix too.
    quiet = rules.rendezvous(WHOS, "10.0.0.5", 29500, None, [rules.ConnectAnswer(False, "timeout")])
    assert "master_addr" in quiet.fix and "check rank 0 (box1), which did not answer" in quiet.fix
    one = report("g", Check("tmux", True, "tmux 3.3"))
    (tmux,) = rules.box_checks(WHOS, [one, None])
    assert tmux.ok and "every box" not in tmux.detail
    assert tmux.detail == (
        "rank 0 (box1): tmux 3.3; not checked on rank 1 (box2) (its preflight did not run)"
    )


def test_a_dial_refused_where_rank_0_listened_does_not_blame_master_addr_alone() -> None:
    """h617 #3: rank 0 bound, and the dial was refused (it came after the listener ended:
    a box slow to log in); the fix named master_addr alone."""
    listen = rules.ListenAnswer(True, addresses=("10.0.0.5",))
    check = rules.rendezvous(
        WHOS, "127.0.0.1", 29611, listen, [rules.ConnectAnswer(False, "refused")]
    )
    assert not check.ok and not check.certain
    assert check.detail == (
        "rank 1 (box2) cannot reach 127.0.0.1:29611: connection refused, though rank 0 (box1) "
        "listened there"
    )
    assert check.fix.startswith("if 127.0.0.1 leads the other boxes elsewhere, set master_addr")
    assert check.fix.endswith(
        "if a box is slow to log in, its dial may have come after rank 0 (box1) stopped "
        "listening: preflight again"
    )
