"""Loopback SSH boxes: real asyncssh servers on 127.0.0.1, each over its own directory.

`rgt-tui demo` and the test suite both run the product against these, so every byte
goes through the same asyncssh client code, known_hosts checking and public-key
authentication as a rented box would. A box behaves like a small sshd:

- exec runs ``bash -c <command>`` in the box directory (its HOME) with a clean
  environment, stdin/stdout/stderr bridged both ways in binary, and the exit status or
  the killing signal reported back; a session that asks for a pty (``ssh -t``, the shell
  key) runs on one of its own instead, its controlling terminal, with the client's
  window size (and its changes) and terminal modes, so a login shell is interactive;
- when the channel or the connection goes away while the command still runs, its
  process group gets SIGHUP and, if the command is still alive a second later, SIGKILL.
  Jobs that detached with ``setsid``/tmux live in another session and survive, as on a
  real box (this is the GEN8/U3 "SSH hang-up" case the product must tell apart);
- SFTP serves the whole filesystem, with relative paths resolved against the box
  directory, as OpenSSH's sftp-server resolves them against HOME;
- local port forwarding (``ssh -L``, ``direct-tcpip``) reaches the box's own loopback
  (``localhost``, 127.0.0.1, ::1), as sshd's default AllowTcpForwarding allows.

asyncssh swallows exceptions raised inside server handlers (the client only sees a
closed channel), so every handler here is wrapped: errors are logged on
``rgt_tui.demo`` and kept in ``LoopbackBox.errors`` for tests to assert empty.

Four modules: ``box`` (one box: the listener, its handlers, SFTP), ``session`` (an exec
channel bridged to its child process, with sshd's hang-up), ``terminal`` (the same with a
pty), ``fleet`` (N boxes plus the client key, known_hosts and hosts.toml to reach them).
"""

from rgt_tui.demo.loopback.box import LOOPBACK_HOST, LoopbackBox
from rgt_tui.demo.loopback.fleet import LoopbackFleet

__all__ = ["LOOPBACK_HOST", "LoopbackBox", "LoopbackFleet"]
