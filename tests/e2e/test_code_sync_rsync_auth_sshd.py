"""ux-f #11: when OpenSSH (which rsync runs) cannot log in while rgt-tui's own connection
can, a sync says ssh's own words ("Permission denied (publickey)") and the fix about the
key (identity_file), not rsync's "unexplained error (code 255)" and "check the
connection". Real components: OpenSSH's sshd and client, rsync, the console entry point.

The split is the one ux-f met: HOME points away from the user's passwd home, so
rgt-tui's connection finds the key in $HOME/.ssh while OpenSSH looks in the passwd
home, which holds no key the box accepts.
"""

from __future__ import annotations

import shutil

from support.cli import rgt
from support.code_trees import add_code, git_tree
from support.fleet_files import set_host_key


def test_an_rsync_login_refused_shows_sshs_words_and_the_key_fix(openssh_server, home, tmp_path):
    server = openssh_server
    code = tmp_path / "proj"
    git_tree(code)
    add_code(server.hosts_file, code)
    set_host_key(server.hosts_file, "identity_file", None, server.host_name)
    (home / ".ssh").mkdir(mode=0o700)
    shutil.copy(server.client_key, home / ".ssh" / "id_ed25519")
    (home / ".ssh" / "id_ed25519").chmod(0o600)
    hosts = server.hosts_file
    failed = rgt("sync", server.host_name, "--hosts", hosts, env={"HOME": str(home)})
    assert failed.returncode == 1, failed.stdout + failed.stderr
    said = failed.stderr
    assert "Permission denied (publickey" in said, said
    assert "unexplained error" not in said and "check the connection" not in said, said
    assert "identity_file" in said and "--sftp" in said, said
    # The same box over rgt-tui's own connection (SFTP) is fine: it was the key.
    sent = rgt("sync", server.host_name, "--hosts", hosts, "--sftp", env={"HOME": str(home)})
    assert sent.returncode == 0, sent.stdout + sent.stderr
