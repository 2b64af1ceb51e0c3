"""ux-a #1: `add` run inside a project's git tree writes the fleet file (and the new
box's queue file) there, and the code default is that same tree. Sync never sends them,
but git lists them: `add` warns and names the .gitignore lines that keep them out.
Real components: the console entry point without a terminal, git.
"""

from __future__ import annotations

from support.cli import rgt
from support.code_trees import git, git_tree, write


def test_add_in_a_git_tree_warns_and_names_the_gitignore_lines_until_they_are_there(tmp_path, home):
    code = tmp_path / "proj"
    git_tree(code)
    at = ("--hosts", str(code / "hosts.toml"))

    first = rgt("add", "local", "--name", "box1", *at, cwd=code)
    assert first.returncode == 0, first.stderr
    assert (
        f"warning: hosts.toml and queues/box1.txt and results (the pulled results) are inside "
        f"the code tree {code}, and git there lists them: rgt-tui sync never sends the fleet "
        "file, its queue files or the pulled results"
    ) in first.stdout, first.stdout
    assert (
        f"keep them out of git with these lines in {code / '.gitignore'}: /hosts.toml queues/ "
        "/results/" in (first.stdout)
    )

    write(
        code, ".gitignore", (code / ".gitignore").read_text() + "/hosts.toml\nqueues/\n/results/\n"
    )
    # box1 is this machine too: --same-account says yes to another entry of it.
    second = rgt("add", "local", "--name", "box2", "--same-account", *at, cwd=code)
    assert second.returncode == 0, second.stderr
    assert "inside the code tree" not in second.stdout  # (the same-account warning stays)
    assert git(code, "status", "--porcelain") == "M .gitignore"


def test_a_code_tree_below_the_repositorys_top_still_warns_of_the_fleet_file(tmp_path, home):
    """``code = ".../proj/code"`` with hosts.toml at the repository's top: the warning
    looked only inside the code tree, so `git add .` would have published every box's
    address without a word (s36 acts hour #10)."""
    proj = tmp_path / "proj"
    git_tree(proj)
    code = proj / "code"
    write(code, "train.py", "print('train')\n")
    at = ("--hosts", str(proj / "hosts.toml"), "--code", str(code))
    added = rgt("add", "local", "--name", "box1", *at, cwd=proj)
    assert added.returncode == 0, added.stderr
    assert (
        f"warning: hosts.toml and queues/box1.txt and results (the pulled results) are inside "
        f"the git work tree {proj}, and git there lists them"
    ) in added.stdout, added.stdout
    assert f"these lines in {proj / '.gitignore'}: /hosts.toml queues/ /results/" in added.stdout


def test_a_queue_file_among_configs_is_named_alone_not_its_folder(tmp_path, home):
    """h553 #3: `--queue experiments/q_bx.txt` beside tracked configs advised ignoring
    `experiments/` whole: a new config there would then be git-ignored, and never sent."""
    code = tmp_path / "proj"
    git_tree(code)
    write(code, "experiments/e1.yaml", "lr: 0.1\n")
    git(code, "add", "experiments/e1.yaml")
    git(code, "commit", "-qm", "configs")
    at = ("--hosts", str(code / "hosts.toml"), "--queue", "experiments/q_bx.txt")
    added = rgt("add", "local", "--name", "bx", *at, cwd=code)
    assert added.returncode == 0, added.stderr
    said = " ".join(added.stdout.split())
    assert (
        f"these lines in {code / '.gitignore'}: /experiments/q_bx.txt /hosts.toml /results/" in said
    ), said
    assert "experiments/ " not in said
