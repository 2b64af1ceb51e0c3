"""``[[groups]]`` in the fleet file (issue 41): a group is a host over boxes of the file,
and each mistake is refused with its line, its key and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from rgt_tui.domain.config import ConfigError
from rgt_tui.services.fleet.file import load_fleet

BOXES = """\
[[hosts]]
name = "box1"
ssh = "root@10.0.0.1:2222"
durable_dir = "/workspace/runs"
cost_per_hour = 2.0

[[hosts]]
name = "box2"
ssh = "root@10.0.0.2"
cost_per_hour = 2.5
"""
RUN = (
    "torchrun --nnodes {nnodes} --node-rank {node_rank} --nproc-per-node {nproc_per_node} "
    "--rdzv-backend c10d --rdzv-endpoint {master_addr}:{master_port} train.py --out {out}"
)


def _load(tmp_path: Path, group: str, boxes: str = BOXES):
    path = tmp_path / "hosts.toml"
    path.write_text(boxes + "\n[[groups]]\n" + group)
    return load_fleet(path)


def _write(tmp_path: Path, host: str) -> Path:
    path = tmp_path / "one.toml"
    path.write_text("[[hosts]]\n" + host)
    return path


def _refused(tmp_path: Path, group: str, boxes: str = BOXES) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, group, boxes)
    return caught.value


def test_a_group_is_a_host_reached_through_rank_0(tmp_path: Path) -> None:
    fleet = _load(
        tmp_path,
        f'name = "pair"\nhosts = ["box1", "box2"]\nnproc_per_node = 8\nrun = "{RUN}"\n'
        'queue = "q.txt"\nnccl_socket_ifname = "eth0"\nnccl_ib = "mlx5"\n',
    )
    pair = fleet.host("pair")
    assert pair.group is not None and pair.group.hosts == ("box1", "box2")
    assert pair.ssh == fleet.host("box1").ssh  # reached, pulled and shown through rank 0
    assert pair.durable_dir == "/workspace/runs" and pair.pull == ("/workspace/runs",)
    assert pair.group.master_addr == "10.0.0.1" and pair.group.master_port == 29500
    assert pair.group.nccl_ib == "mlx5" and pair.group.nccl_timeout_s == 600
    assert pair.group.nccl_debug == "auto"
    # Its boxes bill, each on its own pane: the group adds nothing to the fleet's totals
    # (the header, status, metrics), which sum every host's price (a user's hour saw
    # $11.75/h for boxes billing $7.37/h).
    assert pair.cost_per_hour is None
    assert sum(h.cost_per_hour or 0 for h in fleet.hosts) == 4.5
    # Nor do its cost alerts fire as an unpriced box's would (review h514 #4: a critical
    # GEN1 whose fix, a rate, the group refuses); a box with no rate is told as billed.
    assert pair.alert_rate == 0.0 and fleet.host("box1").alert_rate == 2.0
    unpriced = load_fleet(_write(tmp_path, 'name = "b"\nssh = "root@10.0.0.9"\n'))
    assert unpriced.host("b").alert_rate is None
    assert load_fleet(_write(tmp_path, 'name = "me"\nssh = "local"\n')).host("me").alert_rate == 0
    assert pair.run == RUN and pair.teardown is None


def test_a_group_naming_an_unknown_box_is_refused_by_line(tmp_path: Path) -> None:
    error = _refused(tmp_path, 'name = "pair"\nhosts = ["box1", "box9"]\n')
    assert error.line == 14 and error.key == "hosts"
    assert "box9: not a host of this file" in error.message and "[[hosts]]" in error.message


def test_a_group_named_like_a_host_is_refused(tmp_path: Path) -> None:
    error = _refused(tmp_path, 'name = "box2"\nhosts = ["box1", "box2"]\n')
    assert error.key == "name" and error.line == 13
    assert "already the name of the host at line 7" in error.message


@pytest.mark.parametrize(
    ("group", "key", "says"),
    [
        ('name = "p"\nhosts = ["box1", "box1"]\n', "hosts", "named twice"),
        ('name = "p"\nhosts = ["box1"]\n', "hosts", "at least two boxes"),
        ('name = "p"\nhosts = ["box1", "box2"]\nnccl_ib = 3\n', "nccl_ib", "HCA list"),
        ('name = "p"\nhosts = ["box1", "box2"]\nnccl_debug = "LOUD"\n', "nccl_debug", "INFO"),
        ('name = "p"\nhosts = ["box1", "box2"]\nmaster_addr = "a b"\n', "master_addr", "address"),
        ('name = "p"\nhosts = ["box1", "box2"]\nmaster_port = 70000\n', "master_port", "port"),
        ('name = "p"\nhosts = ["box1", "box2"]\npull_ranks = "1"\n', "pull_ranks", "all"),
        ('name = "p"\nhosts = ["box1", "box2"]\nrun = "x {rank}"\n', "run", "{node_rank}"),
        ('name = "p"\nhosts = ["box1", "box2"]\nssh = "x"\n', "ssh", "[[hosts]]"),
    ],
)
def test_group_mistakes_name_the_key_and_the_fix(
    tmp_path: Path, group: str, key: str, says: str
) -> None:
    error = _refused(tmp_path, group)
    assert error.key == key and says in error.message, str(error)
    assert error.line is not None and error.line >= 13


def test_group_placeholders_are_refused_in_a_host_template(tmp_path: Path) -> None:
    path = tmp_path / "hosts.toml"
    path.write_text('[[hosts]]\nname = "b"\nssh = "root@b"\nrun = "torchrun --nnodes {nnodes}"\n')
    with pytest.raises(ConfigError) as caught:
        load_fleet(path)
    assert caught.value.key == "run" and "[[groups]] placeholder" in caught.value.message


def test_a_nccl_key_in_a_host_entry_is_told_where_it_belongs(tmp_path: Path) -> None:
    error = _refused(
        tmp_path, 'name = "p"\nhosts = ["box1", "box2"]\n', BOXES + "nccl_ib = false\n"
    )
    assert error.key == "nccl_ib" and "into a [[groups]] entry" in error.message


def test_a_groups_acknowledgements_are_every_boxs_own_unless_it_gives_its_own(
    tmp_path: Path,
) -> None:
    """h501 #3: box1 and box2 each acknowledged `gpu`, and the group's launch refused it
    (it read the group's readiness alone, which had no `preflight_ack`)."""
    from rgt_tui.services.queue.launch_preflight import preflight_acks

    boxes = BOXES.replace(
        "cost_per_hour = 2.0\n", 'cost_per_hour = 2.0\npreflight_ack = ["gpu", "driver"]\n'
    ).replace("cost_per_hour = 2.5\n", 'cost_per_hour = 2.5\npreflight_ack = ["gpu", "durable"]\n')
    group = f'name = "pair"\nhosts = ["box1", "box2"]\nrun = "{RUN}"\ncode = "."\n'
    fleet = _load(tmp_path, group, boxes)
    # The group gives a readiness key (code) but no preflight_ack: what both boxes
    # acknowledge; `driver` and `durable` are one box's each, so they are not the group's.
    assert preflight_acks(fleet.host("pair")) == ("gpu",)
    assert preflight_acks(fleet.host("box1")) == ("gpu", "driver")
    own = _load(tmp_path, group + 'preflight_ack = ["clocks"]\n', boxes)
    assert preflight_acks(own.host("pair")) == ("clocks",)
