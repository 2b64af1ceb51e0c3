"""A sync never sends the secrets a code tree holds (a user's hour: `.netrc`,
`.ssh/id_rsa`, `.git-credentials` and `.env` went to the box, mode 0644, without a word):
the names a pull never brings back (SECRET_PATHS), dotenv files and SSH private keys,
tracked, untracked or in a plain folder. It names them, says how a box gets a token
instead, and they never count as uncommitted changes. Real loopback asyncssh boxes, git,
the console entry point."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import arun
from support.code_trees import box_files, git, git_tree, write
from support.fleet_files import set_host_key

from rgt_tui.content.ready_text import sync_result_lines
from rgt_tui.services.code_sync import code_status, sync_code
from rgt_tui.services.code_sync.rules import is_secret
from rgt_tui.services.fleet.file import load_fleet
from rgt_tui.transport import transport_for

SECRETS = (".env", ".git-credentials", ".netrc", ".ssh/id_rsa", "deploy/id_ed25519")
CODE = (".env.example", "configs/env.yaml", "keys.py", "src/train.py")


def _with_code(loop, code: Path):  # type: ignore[no-untyped-def]
    """box1 of the loopback fleet ``loop``, with ``code`` as its code tree."""
    set_host_key(loop.hosts_file, "code", str(code), "box1")
    return load_fleet(loop.hosts_file).host("box1")


async def _sync(host, *, check: bool = False):  # type: ignore[no-untyped-def]
    """One sync of ``host`` on a connection of its own; with ``check``, its code status
    after it too."""
    t = transport_for(host)
    try:
        result = await sync_code(host, t, method="sftp")
        return result, (await code_status(host, t) if check else None)
    finally:
        await t.close()


@pytest.mark.parametrize(
    "rel",
    [*SECRETS, ".ENV.production", "sub/.aws/credentials", ".envrc", ".pypirc",
     ".kaggle/kaggle.json", ".env/production", "app/.npmrc",
     # h603 #2: sent before, every one.
     "credentials.json", "gcp/service-account.json", "client_secret_123.apps.json", "key.pem",
     "certs/server.key", "my.p12", "id_rsa.bak", "keys/id_ed25519.old", ".gnupg/secring.gpg",
     ".kube/config", "deploy/.vault-token", "wandb-api.key",
     # h606 #7: their copies.
     "credentials (1).json", "credentials.json.bak", "application_default_credentials.json",
     "server.pem.bak", "server.key.orig", "putty.ppk", "id_ed25519~", "_netrc"],
)  # fmt: skip
def test_secret_names(rel: str) -> None:
    assert is_secret(rel)


@pytest.mark.parametrize(
    "rel",
    [*CODE, "id_rsa.pub", "keys/id_ed25519.old.pub", ".envrc_docs.md", "docs/ssh.md",
     "keyboard.py", "credentials.py", "configs/service.json", "monkey.yaml"],
)  # fmt: skip
def test_code_names(rel: str) -> None:
    assert not is_secret(rel)


@pytest.mark.parametrize("use_git", [True, False])
async def test_sync_leaves_the_trees_secrets_here_and_names_them(
    make_loopback_fleet, tmp_path, use_git: bool
) -> None:
    loop = await make_loopback_fleet(1)
    code = tmp_path / "proj"
    if use_git:
        git_tree(code)
        write(code, ".env", "WANDB_API_KEY=abc\n")
        git(code, "add", "-f", ".env")  # even a tracked one
        git(code, "commit", "-qm", "oops")
    else:
        write(code, ".env", "WANDB_API_KEY=abc\n")
        write(code, "src/train.py", "print('train')\n")
    for rel in SECRETS[1:]:
        write(code, rel, "secret\n")
    write(code, ".env.example", "WANDB_API_KEY=\n")
    result, status = await _sync(_with_code(loop, code), check=True)
    on_box = box_files(loop.box("box1").root)
    assert not set(SECRETS) & on_box, on_box
    assert {".env.example", "src/train.py"} <= on_box
    assert result.secrets == tuple(sorted(SECRETS)), result.secrets
    said = "\n".join(line.plain for line in sync_result_lines(result, "box1"))
    assert "not sent: .env, .git-credentials, .netrc and 2 more" in said, said
    assert "files named like secrets never go to a box" in said and "[fleet.credentials]" in said, (
        said
    )
    # Left here on purpose: the box's code is the tree's, and untracked secrets are no
    # uncommitted change.
    assert status is not None and status.in_sync, status
    if use_git:
        assert not set(status.uncommitted) & set(SECRETS), status.uncommitted

    cli = await arun("sync", "box1", "--hosts", str(loop.hosts_file), "--sftp", timeout=120)
    assert cli.returncode == 0, cli.stderr
    assert "box1: not sent: .env, .git-credentials, .netrc" in cli.stdout, cli.stdout


async def test_a_code_setting_that_is_no_folder_is_said_once_with_where_to_fix_it(tmp_path):
    """`code` naming a file read "does not exist here", with a fix naming only the host,
    and the line came twice (as a warning, then as the error): a user's hour."""
    (tmp_path / "afile").write_text("")
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        f'[fleet]\ncode = "{tmp_path / "afile"}"\n[[hosts]]\nname = "box3"\nssh = "u@127.0.0.1:1"\n'
    )
    done = await arun("sync", "box3", "--hosts", str(hosts), timeout=60)
    assert done.returncode == 1
    said = done.stderr
    assert f"the code directory {tmp_path / 'afile'} is a file, not a folder" in said, said
    assert "set code (in [fleet], or box3's [[hosts]] entry)" in said, said
    assert said.count("the code directory") == 1, said


async def test_a_box_file_no_sync_put_there_is_kept_before_the_first_sync_replaces_it(
    make_loopback_fleet, tmp_path
):
    """A box whose code came another way (the demo's own, a git clone, an scp): the
    first sync replaced an edit made there with no copy and no word (a user's hour)."""
    loop = await make_loopback_fleet(1)
    code = tmp_path / "proj"
    write(code, "train.py", "print('tree')\n")
    write(code, "same.py", "SAME = 1\n")
    root = loop.box("box1").root
    write(root, "train.py", "print('tree')\n# edited on the box\n")
    write(root, "same.py", "SAME = 1\n")  # already the tree's: nothing to keep
    result, _ = await _sync(_with_code(loop, code))
    assert (root / "train.py").read_text() == "print('tree')\n"
    assert result.replaced_found == ("train.py",) and result.overwritten == ()
    kept = Path(result.kept_in)
    assert (kept / "train.py").read_text() == "print('tree')\n# edited on the box\n"
    assert not (kept / "same.py").exists()
    said = "\n".join(line.plain for line in sync_result_lines(result, "box1"))
    assert (
        f"train.py was on the box, not put there by a sync: replaced by the tree's; the box's copy is kept in {kept}"
        in said
    ), said


async def test_results_under_the_workdir_are_never_code_to_remove(make_loopback_fleet, tmp_path):
    """durable_dir inside the workdir: sync named the runs' results "left on the box, not
    in the tree — remove by hand", and preflight's code check said "remove" them (a
    user's hour)."""
    loop = await make_loopback_fleet(1)
    code = tmp_path / "proj"
    write(code, "train.py", "print('tree')\n")
    host = _with_code(loop, code)
    root = loop.box("box1").root
    assert host.durable_dir.startswith(host.workdir.rstrip("/") + "/"), host
    results = root / host.durable_dir[len(host.workdir.rstrip("/")) + 1 :]
    write(results, "c1/big.bin", "weights\n")
    write(root, "stray.py", "STRAY = 1\n")  # a box-only file that is code: still named
    result, status = await _sync(host, check=True)
    assert result.left == ("stray.py (not put there by rgt-tui sync)",), result.left
    assert status is not None and "c1/big.bin" not in (status.problem() or "")
    assert (results / "c1" / "big.bin").exists()


async def test_a_secret_an_older_sync_put_on_the_box_is_left_and_named(
    make_loopback_fleet, tmp_path
):
    """An older rgt-tui sent .env and recorded it: the next sync pruned it as "no longer
    in the tree", which it still was (the review of this change)."""
    import hashlib

    loop = await make_loopback_fleet(1)
    code = tmp_path / "proj"
    write(code, "train.py", "print('tree')\n")
    write(code, ".env", "TOKEN=abc\n")
    host = _with_code(loop, code)
    root = loop.box("box1").root
    write(root, ".env", "TOKEN=abc\n")  # as the older sync left it, with its record line
    digest = hashlib.sha256(b"TOKEN=abc\n").hexdigest()
    (root / ".rgt-sync.record").write_text(f"{digest}\t-\t.env\n")
    result, _ = await _sync(host)
    assert (root / ".env").read_text() == "TOKEN=abc\n"  # not removed
    assert ".env" not in result.removed and result.secrets_left == (".env",)
    said = "\n".join(line.plain for line in sync_result_lines(result, "box1"))
    assert "an earlier sync put .env on the box: left there" in said, said
