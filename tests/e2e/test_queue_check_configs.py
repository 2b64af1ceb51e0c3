"""`rgt-tui queue check` with a host's `code` tree (ux-d #2, ux-f #8): a cell whose config
the tree does not hold, or holds but sync does not send, is reported at its file:line
with the fix; without `code` nothing is said (the config may live only on the box). The
real console entry point over a real git tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

from support.cli import rgt


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True, capture_output=True,
    )  # fmt: skip


def test_queue_check_names_each_config_the_code_tree_does_not_send(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    (proj / "configs").mkdir(parents=True)
    for name in ("exp.yaml", "kept.yaml", "secret.yaml"):
        (proj / "configs" / name).write_text("lr: 1\n")
    (proj / ".gitignore").write_text("configs/secret.yaml\nconfigs/local/\n")
    _git(proj, "init", "-q")
    _git(proj, "add", "-A")
    _git(proj, "commit", "-q", "-m", "c")
    _git(proj, "mv", "configs/exp.yaml", "configs/exp_v2.yaml")  # ux-d #2's rename, then delete
    _git(proj, "rm", "-q", "-f", "configs/exp_v2.yaml")
    _git(proj, "commit", "-q", "-m", "gone")

    queues = tmp_path / "queues"
    queues.mkdir()
    (queues / "box1.txt").write_text(
        "configs/kept.yaml t 2\n"
        "configs/exp.yaml cls 2\n"
        "configs/secret.yaml t 2\n"
        "/elsewhere/abs.yaml t 2\n"  # absolute: not the tree's to answer for
        "configs/local/made_on_box.yaml t 2\n"  # ignored: sync neither sends nor prunes it
    )
    (queues / "box2.txt").write_text("configs/only_on_box.yaml t 2\n")  # box2 has no code
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        '[[hosts]]\nname = "box1"\nssh = "u@a.example"\nqueue = "queues/box1.txt"\n'
        f'run = "python train.py --config {{cfg}}"\ncode = "{proj}"\n\n'
        '[[hosts]]\nname = "box2"\nssh = "u@b.example"\nqueue = "queues/box2.txt"\n'
        'run = "python train.py --config {cfg}"\n'
    )

    checked = rgt("queue", "check", "--hosts", hosts, cwd=tmp_path)
    assert checked.returncode == 1, (checked.stdout, checked.stderr)
    said = checked.stderr.splitlines()
    assert said[0].startswith(
        f"queues/box1.txt:2: configs/exp.yaml is not in {proj} (box1's code tree"
    ), said
    assert "cell exp would fail on box1 — fix the path on this line" in said[0]
    assert said[1].startswith(
        f"queues/box1.txt:3: configs/secret.yaml is in {proj} but sync does not send it "
        "(git-ignored, or left out by code_exclude)"
    ), said
    assert len(said) == 2  # kept.yaml, the absolute and ignored paths, box2's line: nothing

    # A FILE that does not exist is a problem, not a queue file counted.
    (tmp_path / "extra.txt").write_text("configs/extra.yaml t 2\n")
    extra = rgt("queue", "check", "--hosts", hosts, "extra.txt", "missing.txt", cwd=tmp_path)
    assert "7 cells in 3 queue files" in extra.stdout, extra.stdout
    assert "missing.txt: queue file not found" in extra.stderr

    # Fixed: the line names a config the tree sends.
    (queues / "box1.txt").write_text("configs/kept.yaml t 2\n")
    clean = rgt("queue", "check", "--hosts", hosts, cwd=tmp_path)
    assert clean.returncode == 0, clean.stderr


def test_a_run_template_that_cds_reads_the_config_from_where_it_goes(tmp_path: Path) -> None:
    # `cd` into the workdir (README's template) or a folder under it: the config is read
    # from that folder of the tree; a `cd` out of the workdir: not the tree's to say.
    proj = tmp_path / "proj"
    (proj / "src" / "configs").mkdir(parents=True)
    (proj / "src" / "configs" / "a.yaml").write_text("lr: 1\n")
    queues = tmp_path / "queues"
    queues.mkdir()
    (queues / "q.txt").write_text("configs/a.yaml t 2\nconfigs/gone.yaml t 2\n")
    runs = {
        "in_sub": "cd ~/proj/src && python train.py --config {cfg}",
        "relative": "cd src; python train.py --config {cfg}",
        "elsewhere": "cd /opt/other && python train.py --config {cfg}",
    }
    for name, run in runs.items():
        hosts = tmp_path / f"{name}.toml"
        hosts.write_text(
            f'[[hosts]]\nname = "box1"\nssh = "u@a.example"\nqueue = "queues/q.txt"\n'
            f'workdir = "~/proj"\nrun = "{run}"\ncode = "{proj}"\n'
        )
        checked = rgt("queue", "check", "--hosts", hosts, cwd=tmp_path)
        if name == "elsewhere":
            assert checked.returncode == 0, (name, checked.stdout, checked.stderr)
            continue
        assert checked.returncode == 1, (name, checked.stdout, checked.stderr)
        said = checked.stderr.splitlines()
        assert len([s for s in said if " is not in " in s]) == 1, (name, said)
        assert said[0].startswith(f"queues/q.txt:2: configs/gone.yaml is not in {proj / 'src'}")
