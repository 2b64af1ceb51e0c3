"""A refused append names the way on it has: `queue append` takes no --ack, so its
refusal for a failed check points at the fleet file's preflight_ack (hour s18b #3 was told
`--ack signal-lead`, which `queue append` rejects as an unknown argument)."""

from __future__ import annotations

from rgt_tui.cli import build_parser
from rgt_tui.domain.preflight import Check, PreflightReport
from rgt_tui.services.queue.launch_preflight import append_ack_hint, preflight_problems

REPORT = PreflightReport("slurm1", (Check("signal-lead", False, "300 s ≥ the job's 300 s"),))


def test_a_launch_refusal_offers_ack_and_an_append_refusal_the_fleet_file() -> None:
    (launch,) = preflight_problems(REPORT, (), ())
    assert "--ack signal-lead" in launch
    (append,) = preflight_problems(REPORT, (), (), append_ack_hint)
    assert 'preflight_ack = ["signal-lead"]' in append and "--ack" not in append
    assert preflight_problems(REPORT, (), ("signal-lead",), append_ack_hint) == []


def test_queue_append_indeed_takes_no_ack() -> None:
    """The premise: were --ack added to `queue append`, its refusal could offer it."""
    import contextlib
    import io

    parser = build_parser()
    with contextlib.redirect_stderr(io.StringIO()), contextlib.suppress(SystemExit):
        parser.parse_args(["queue", "append", "slurm1", "--ack", "signal-lead"])
        raise AssertionError("queue append took --ack")
