"""Issue 42's smoke step (GEN5/U10) and China routes (generic-ssh §3) over real loopback
boxes running the real box scripts.

No GPU exists here: the CUDA OOM is a smoke script that prints the OOM traceback torch
printed on a real card (tests/fixtures/gpu/cuda_oom_traceback.txt) and exits 1, as the
run would; the peak host memory is a real script's (~60 MB, measured from /proc). The
mirrors and the blocked route are HTTP servers on 127.0.0.1 (the loopback box is this
machine): no request leaves it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import http.server
import re
import shlex
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from support.queues import SCRIPT_RUN, wait_view
from support.waiting import wait_for

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.queue_state import FINISHED
from rgt_tui.services.preflight import preflight
from rgt_tui.services.queue.launch import launch, plan_launch

FIXTURES = Path(__file__).parents[1] / "fixtures" / "gpu"
UNITS = {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def with_ready(host: HostConfig, **keys) -> HostConfig:
    return dataclasses.replace(host, ready=dataclasses.replace(host.ready, **keys))


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie awaiting its reaper does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def by_name(report) -> dict:
    return {c.name: c for c in report.checks}


async def smoke_check_of(make_queue_fleet, smoke: str):  # type: ignore[no-untyped-def]
    """The smoke check of a one-box queue fleet whose ``smoke`` is ``smoke``, by preflight."""
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    transport = qf.transport()
    try:
        report = await preflight(qf.fleet, with_ready(qf.host(), smoke=smoke), transport)
    finally:
        await transport.close()
    return by_name(report)["smoke"]


async def test_a_cuda_oom_in_the_smoke_refuses_the_launch_until_acknowledged(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    qf.write_queue(f"{qf.cell_script('one', 'echo one')} t\n")
    trace = FIXTURES / "cuda_oom_traceback.txt"
    host = with_ready(qf.host(), smoke=f"cat {shlex.quote(str(trace))}; exit 1")
    transport = qf.transport()
    try:
        await transport.connect()
        plan = await plan_launch(qf.fleet, host, transport)
        smoke = next(p for p in plan.problems if p.startswith("preflight check 'smoke'"))
        assert "CUDA out of memory in the smoke of `cat" in smoke and "(GEN5/U10)" in smoke
        assert "Tried to allocate" in smoke and "no GPU (no nvidia-smi on the box)" in smoke
        assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in smoke
        assert "make the batch smaller" in smoke and "--ack smoke" in smoke
        plan = await plan_launch(qf.fleet, host, transport, acks=["smoke"])
        assert not [p for p in plan.problems if "'smoke'" in p], plan.problems
        assert any("preflight check 'smoke' failed (acknowledged" in w for w in plan.warnings)
    finally:
        await transport.close()


async def test_a_failed_smoke_says_how_to_go_ahead_in_words_the_tui_and_cli_share(
    make_queue_fleet,
):
    """ux-d #15: the check's fix is shown in the TUI too, where there is no --ack flag:
    it says to acknowledge the smoke check (the launch's refusal adds how, per side)."""
    smoke = await smoke_check_of(make_queue_fleet, "echo the step broke; exit 3")
    assert not smoke.ok and "exited 3 after" in smoke.detail, smoke
    assert smoke.fix.endswith("or launch anyway: acknowledge the smoke check"), smoke.fix
    assert "--ack" not in smoke.fix


async def test_a_smoke_under_torchrun_names_the_worker_s_error_not_torchrun_s_banner(
    make_queue_fleet,
):
    """Hour s18b #7: the last lines of a failed torchrun are its ChildFailedError banner
    (a real recording, tests/fixtures/torchrun); the worker's error comes before it."""
    log = Path(__file__).parents[1] / "fixtures" / "torchrun" / "worker_raised.log"
    smoke = await smoke_check_of(make_queue_fleet, f"cat {shlex.quote(str(log))}; exit 1")
    assert not smoke.ok, smoke
    assert "a worker's error: RuntimeError: boom: loss is NaN at step 2" in smoke.detail, smoke
    assert "=====" not in smoke.detail and "error_file" not in smoke.detail


# Holds ~60 MB resident until the smoke's sampler has looked at it twice since (its
# ~/.rgt/smoke/samples count), so the measurement never depends on timing; then prints
# the environment it ran in.
HOLDER = """
import os, sys, time
block = bytearray(60 << 20)
for i in range(0, len(block), 4096):
    block[i] = 1
def count():
    try:
        return int(open(os.path.expanduser("~/.rgt/smoke/samples")).read() or 0)
    except (OSError, ValueError):  # not written yet
        return 0
seen = count()
deadline = time.monotonic() + 90
while count() < seen + 2 and time.monotonic() < deadline:
    time.sleep(0.05)
for name in ("PWD", "OMP_NUM_THREADS", "RGT_SMOKE", "PIP_INDEX_URL", "HF_ENDPOINT"):
    print(name + "=" + os.environ.get(name, ""))
"""


async def test_a_passing_smoke_records_its_peak_host_memory_in_the_cells_environment(
    make_queue_fleet, tmp_path
):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    script = tmp_path / "hold.py"
    script.write_text(HOLDER)
    host = with_ready(
        qf.host(),
        smoke=f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}",
        pip_index_url="http://127.0.0.1:9/simple",
    )
    transport = qf.transport()
    try:
        report = await preflight(qf.fleet, host, transport)
    finally:
        await transport.close()
    smoke = by_name(report)["smoke"]
    assert smoke.ok, smoke
    assert smoke.detail.startswith(f"`{host.ready.smoke}` exited 0 after ")
    assert "no GPU (no nvidia-smi on the box)" in smoke.detail
    size, unit = re.search(r"peak host memory ([\d.]+)([BKMG])", smoke.detail).groups()
    assert 55 << 20 <= float(size) * UNITS[unit] < 1 << 30, smoke.detail
    log = (qf.root() / ".rgt" / "smoke" / "cells" / "smoke.log").read_text()
    assert f"PWD={qf.root()}" in log and "RGT_SMOKE=1" in log
    assert re.search(r"OMP_NUM_THREADS=\d+", log)
    assert "PIP_INDEX_URL=http://127.0.0.1:9/simple" in log and "HF_ENDPOINT=\n" in log


async def test_smoke_seconds_runs_the_first_cell_for_that_long_then_stops_it(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    # The cell saves into its {out}: the smoke's scratch, emptied before (a stale save
    # there is gone) and after (nothing left for the real run in the durable dir).
    forever = (
        'echo "started $RGT_SMOKE out=$2 had=$(ls -A "$2" 2>/dev/null | wc -l)"; '
        'mkdir -p "$2" && echo step20 > "$2/checkpoint.pt"; exec sleep 600'
    )
    qf.write_queue(
        f"{qf.cell_script('skipped', 'exit 3')} t\n{qf.cell_script('first', forever)} t\n"
    )
    host = with_ready(qf.host(), smoke_seconds=2)
    stale = qf.root() / ".rgt" / "smoke" / "out" / "first" / "checkpoint.pt"
    stale.parent.mkdir(parents=True)
    stale.write_text("step20 of the last smoke")
    transport = qf.transport()
    try:
        await transport.connect()
        plan = await plan_launch(qf.fleet, host, transport, start_index=1)
        assert plan.preflight is not None
        smoke = by_name(plan.preflight)["smoke"]
        alone = by_name(await preflight(qf.fleet, host, transport))["smoke"]
    finally:
        await transport.close()
    assert smoke.ok, smoke
    assert (
        "the queue's first cell ran" in smoke.detail
        and "(stopped at smoke_seconds 2)" in smoke.detail
    )
    log = (qf.root() / ".rgt" / "smoke" / "cells" / "smoke.log").read_text()
    assert f"started 1 out={qf.root()}/.rgt/smoke/out/first had=0" in log, log
    assert not (qf.root() / ".rgt" / "smoke" / "out").exists()
    real_out = Path(host.durable_dir.replace("~", str(qf.root()), 1)) / "first"
    assert not real_out.exists(), "the smoke saved into the real run's {out}"
    state = (qf.root() / ".rgt" / "smoke" / "cells" / "smoke.state").read_text()
    pid = int(re.search(r"^start \d+ \S+ (\d+)$", state, re.M).group(1))
    await wait_for(lambda: not alive(pid), 30, "the smoke's cell to be stopped")
    assert (
        alone.ok
        and not alone.ran
        and alone.detail.startswith("not run: smoke_seconds runs the queue's first cell")
    )


class _Mirror(http.server.BaseHTTPRequestHandler):
    """A fast stand-in mirror: 300 KiB at once (over the rate's minimum size)."""

    body = b"x" * (300 * 1024)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


class _Blocked(_Mirror):
    """The blocked route: takes the connection and never answers (until the test ends)."""

    released = threading.Event()

    def do_GET(self) -> None:  # noqa: N802
        self.released.wait(60)


@contextlib.contextmanager
def local_server(handler: type) -> Iterator[str]:
    """An HTTP server on 127.0.0.1:<free port>; yields its base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        _Blocked.released.set()
        server.shutdown()
        server.server_close()


async def test_a_blocked_route_fails_naming_the_endpoint_and_the_mirror(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    with local_server(_Mirror) as fast, local_server(_Blocked) as blocked:
        _Blocked.released.clear()
        host = with_ready(
            qf.host(),
            china_mirrors=True,
            pip_index_url=f"{fast}/simple",
            hf_endpoint=blocked,
            github_url=fast,
        )
        transport = qf.transport()
        try:
            route = by_name(await preflight(qf.fleet, host, transport))["route"]
        finally:
            _Blocked.released.set()
            await transport.close()
    assert not route.ok
    assert f"Hugging Face {blocked}: no answer in 10 s" in route.detail
    assert f"the pip index {fast}/simple" not in route.detail  # only the slow one is named
    assert (
        route.fix == 'hf_endpoint = "https://hf-mirror.com" (exported to every cell as HF_ENDPOINT)'
    )


async def test_fast_routes_pass_and_every_cell_exports_the_mirrors(make_queue_fleet):
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    show = 'echo "PIP=$PIP_INDEX_URL HF=$HF_ENDPOINT"'
    qf.write_queue(f"{qf.cell_script('one', show)} t\n")
    with local_server(_Mirror) as fast:
        host = with_ready(
            qf.host(),
            china_mirrors=True,
            pip_index_url=f"{fast}/simple",
            hf_endpoint=f"{fast}/hf",
            github_url=fast,
        )
        transport = qf.transport()
        try:
            await transport.connect()
            plan = await plan_launch(qf.fleet, host, transport)
            assert plan.ok, plan.problems
            await launch(plan, transport)
        finally:
            await transport.close()
    assert plan.preflight is not None
    route = by_name(plan.preflight)["route"]
    assert route.ok, route
    assert f"the pip index {fast}/simple: first byte" in route.detail
    assert f"Hugging Face {fast}/hf: first byte" in route.detail and "GitHub" in route.detail
    await wait_view(qf, lambda v: v.state == FINISHED, what="the queue to finish")
    log = (qf.qdir() / "cells" / "one.log").read_text()
    assert f"PIP={fast}/simple HF={fast}/hf" in log


async def test_a_credential_the_smoke_prints_is_hidden_in_its_last_lines(
    make_queue_fleet, monkeypatch
):
    """h543 #3: a smoke that prints a credential (`set -x`, a curl with its header) is
    shown as [hidden] in the check's last lines, as the box's echo of the file is."""
    from rgt_tui.domain.config import Credential

    monkeypatch.setenv("H543_TOKEN", "tok-ENVMARK9abcdef")
    qf = await make_queue_fleet(1, run=SCRIPT_RUN)
    host = with_ready(
        qf.host(),
        smoke='echo "failing with key $API_TOKEN"; exit 3',
        credentials=(Credential("API_TOKEN", "env", "H543_TOKEN"),),
    )
    transport = qf.transport()
    try:
        smoke = by_name(await preflight(qf.fleet, host, transport))["smoke"]
    finally:
        await transport.close()
    assert not smoke.ok and "failing with key [hidden]" in smoke.detail, smoke
    assert "ENVMARK9" not in smoke.detail
