"""Issue 42's smoke and China-route keys read from a real fleet file: the mirrors a
host's cells export per profile, a host's own keys over them, a bad mirror named with
its line, and a Slurm login node's preflight running neither check."""

from __future__ import annotations

from support.fleet_files import load_error, write_hosts

from rgt_tui.domain.preflight_checks import preflight_scope
from rgt_tui.domain.routes import host_routes
from rgt_tui.profiles import profile
from rgt_tui.services.fleet.file import load_fleet

FLEET = """
[fleet]
smoke_seconds = 60

[[hosts]]
name = "autodl1"
ssh = "root@autodl.example:2222"
profile = "autodl"

[[hosts]]
name = "bare"
ssh = "u@bare.example"
smoke = "python train.py --max-steps 20"
hf_endpoint = "https://hf.internal.example/"

[[hosts]]
name = "gfw"
ssh = "u@gfw.example"
china_mirrors = true
pip_index_url = "https://mirrors.aliyun.com/pypi/simple"

[[hosts]]
name = "autodl-off"
ssh = "root@autodl2.example"
profile = "autodl"
china_mirrors = false

[[hosts]]
name = "cluster"
ssh = "u@login.example"
profile = "slurm"
scheduler = "slurm"
partition = "gpu"
smoke = "python train.py"
china_mirrors = true
"""


def test_mirrors_per_profile_and_host_and_what_each_cell_exports(tmp_path):
    fleet = load_fleet(write_hosts(tmp_path, FLEET))
    hosts = {h.name: h for h in fleet.hosts}
    env = {n: dict(host_routes(h.ready, profile(h.profile)).cell_env()) for n, h in hosts.items()}
    assert env["autodl1"] == {
        "PIP_INDEX_URL": "https://pypi.tuna.tsinghua.edu.cn/simple",
        "HF_ENDPOINT": "https://hf-mirror.com",
    }
    assert env["bare"] == {"HF_ENDPOINT": "https://hf.internal.example"}
    assert env["gfw"] == {
        "PIP_INDEX_URL": "https://mirrors.aliyun.com/pypi/simple",
        "HF_ENDPOINT": "https://hf-mirror.com",
    }
    assert env["autodl-off"] == {}
    routes = {n: host_routes(h.ready, profile(h.profile)) for n, h in hosts.items()}
    assert routes["autodl1"].china and routes["gfw"].china
    assert not routes["bare"].china and not routes["autodl-off"].china
    assert hosts["bare"].ready.smoke == "python train.py --max-steps 20"
    assert hosts["bare"].ready.smoke_seconds == 60  # the fleet's default
    assert "smoke" in preflight_scope(hosts["bare"]).checks
    assert "route" in preflight_scope(hosts["autodl1"]).checks
    login = preflight_scope(hosts["cluster"])
    assert "smoke" not in login.checks and "route" not in login.checks
    assert "the smoke would need an allocation" in login.note


def test_a_mirror_that_is_not_an_address_is_named_with_its_line(tmp_path):
    error = load_error(
        tmp_path,
        """
        [[hosts]]
        name = "gfw"
        ssh = "u@gfw.example"
        hf_endpoint = "hf-mirror.com"
        """,
    )
    assert error.key == "hf_endpoint" and error.line == 4
    assert "expected an http(s) address such as https://hf-mirror.com" in str(error)
