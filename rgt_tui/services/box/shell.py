"""A shell on a box (``s``, ``rgt-tui shell HOST``): the user's own ``ssh``, our rules.

The command is the user's OpenSSH with their ssh_config and keys, but with rgt-tui's
host-key check and no agent, X11 or port forwarding, whatever ssh_config says
(``transport.openssh``, which also confirms that with ``ssh -G``). On the box, when the
queue's tmux session runs, the shell is a login shell in a NEW window of that session at
the workdir (``queue_window_script``): never the runner's window, where a Ctrl-C would
stop the runner; else a login shell in the workdir. Which of the two is decided there, in
the same command, so there is no window between a check and the attach. A host on this
machine (``ssh = "local"``) gets the same, locally.

The process runs with the terminal attached (``run_attached``); while it does, the keys
that send signals (Ctrl-C, Ctrl-\\, Ctrl-Z) are the shell's: ``keys_to_the_shell`` keeps
them from stopping rgt-tui itself, which shares the terminal's process group.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.queue_records import tmux_session_name
from rgt_tui.services.box_script import box_path
from rgt_tui.transport.openssh import OpenSsh, openssh_for

SSH_FAILED = 255  # ssh's own exit status when it could not connect (or was refused)
_TMUX_CHECK_S = 5.0
# The keys a terminal turns into signals for its foreground process group: rgt-tui is in
# that group while the shell runs, and must not be stopped or interrupted by them.
_KEY_SIGNALS = tuple(
    s for s in (signal.SIGINT, signal.SIGQUIT, getattr(signal, "SIGTSTP", None)) if s is not None
)


@dataclass(frozen=True)
class ShellCommand:
    """What ``run_attached`` runs: the argv, where (local hosts), and a note to print first."""

    host: str
    argv: tuple[str, ...]
    session: str  # the queue's tmux session, attached to when it runs
    cwd: Path | None = None  # local hosts: the workdir (ssh: the box's shell changes to it)
    note: str = ""  # said before the shell starts (a missing workdir, a nested tmux)
    env: Mapping[str, str] | None = None  # ssh: OpenSsh.env (None: this process's)
    terminal: bool = True  # False: a script's, which reads its input in a plain shell

    def describe(self) -> str:
        """One line: where the shell goes."""
        where = "this machine" if self.cwd is not None else "ssh"
        if not self.terminal:  # tmux cannot attach without one (hour s45c #4)
            return f"{self.host}: a shell ({where}; no terminal here: it reads its input)"
        return (
            f"{self.host}: a shell ({where}; a new window of the queue's tmux session "
            f"{self.session} when it runs in one)"
        )


def queue_window_script(session: str) -> str:
    """POSIX sh, run in the workdir: when tmux session ``session`` (the queue's) exists, a
    login shell in a new window of it at this directory, attached, and on the way back
    (``exit`` in it, or tmux's detach) that window closed; else ``exec`` a login shell.

    The window is made in a session of its own (``<session>-shell-<pid>``) and linked into
    the queue's, and that session is what the terminal attaches to: it holds only the new
    window, so the runner's is never shown, and when the shell exits the session ends and
    the client detaches (attached to the queue's session itself, tmux would switch to the
    runner's window instead). Each step that fails falls back to the plain login shell."""
    exact = shlex.quote("=" + session)  # "=": that name exactly, never a prefix
    # No quote, backslash or % in these lines: each is quoted two or three times over.
    hint = (
        f"rgt-tui: a new window in tmux session {session}, the queue runner keeps running in "
        "its own window. `exit` closes this window and goes back to rgt-tui, and so does "
        "the box's tmux detach (its prefix then d: Ctrl-b d by default; inside a tmux of "
        "your own, Ctrl-b Ctrl-b d), which closes it too."
    )
    # Run by the tmux server's default-shell (bash, zsh, fish, ...): /bin/sh says it.
    inner = f'echo {shlex.quote(hint)}; exec "${{SHELL:-/bin/sh}}" -l'
    window = f"/bin/sh -c {shlex.quote(inner)}"
    # Said on the way back, not before the attach: a tmux client taking the terminal
    # flushes its output queue (tcflush TCOFLUSH), so a line the box printed just before
    # is lost whenever ssh had not read it yet (seen in CI under load).
    said = shlex.quote(
        f"rgt-tui: closed the new window in tmux session {session}; the queue runner stays in "
        "window "
    )
    # tmux refusing the terminal (an unknown TERM on the box, no tty) exits at once and
    # non-zero: the plain login shell then, as for every other step that fails.
    refused = shlex.quote(
        f"rgt-tui: tmux could not attach to a new window of session {session} (see above); "
        "a login shell here instead, the queue runner untouched in window "
    )
    return (
        f"if command -v tmux >/dev/null 2>&1 && tmux has-session -t {exact} 2>/dev/null; then "
        f"r=$(tmux list-windows -t {exact} -F '#{{window_index}}' 2>/dev/null | head -n 1); "
        f"v={shlex.quote(session + '-shell-')}$$; "
        f'w=$(tmux new-session -d -P -F \'#{{window_id}}\' -s "$v" -c "$PWD" {shlex.quote(window)}) '
        "&& { "
        f'if tmux link-window -d -s "$w" -t {shlex.quote("=" + session + ":")} 2>/dev/null; then '
        'tmux attach -t "=$v"; rc=$?; tmux kill-window -t "$w" 2>/dev/null; '
        f"if [ $rc -eq 0 ]; then printf '%s%s\\n' {said} \"$r\" >&2; exit 0; fi; "
        f'printf \'%s%s\\n\' {refused} "$r" >&2; exec "${{SHELL:-/bin/sh}}" -l; fi; '
        'tmux kill-session -t "=$v" 2>/dev/null; }; '
        "fi; "
        'exec "${SHELL:-/bin/sh}" -l'
    )


def remote_shell_script(host: HostConfig, *, window: bool = True) -> str:
    """The command the box's login shell runs (POSIX sh, as the queue's commands are):
    into the workdir, then a new window in the queue's tmux session when it exists, else a
    login shell (``queue_window_script``). Without ``window`` (no terminal on this side:
    a script on stdin) the login shell at once: a tmux window cannot take a script's
    input, and its refusal was printed before every scripted run (h462 #7)."""
    workdir = box_path(host.workdir)
    missing = shlex.quote(f"rgt-tui: the workdir {host.workdir} is not on the box; in ~ instead")
    then = (
        queue_window_script(tmux_session_name(host.name))
        if window
        else 'exec "${SHELL:-/bin/sh}" -l'
    )
    return f"cd {workdir} 2>/dev/null || {{ echo {missing} >&2; cd; }}; " + then


def shell_command(host: HostConfig, *, terminal: bool | None = None) -> ShellCommand | str:
    """The shell for ``host``, or why there is none (a sentence naming the fix).
    ``terminal``: whether this side's stdin is a terminal (None: look), so the box's
    shell gets one (a script's, with none, ends with its input).

    Blocking: runs ``ssh -G`` (and for a local host a ``tmux has-session``); call it in a
    thread from the event loop."""
    session = tmux_session_name(host.name)
    if terminal is None:
        terminal = sys.stdin is not None and sys.stdin.isatty()
    if host.is_local:
        return _local_shell(host, session, terminal)
    ssh = openssh_for(host, interactive=True, terminal=terminal)
    if not isinstance(ssh, OpenSsh):
        return f"{host.name}: no shell over your ssh: {ssh}"
    return ShellCommand(
        host.name,
        ssh.command(remote_shell_script(host, window=terminal)),
        session,
        env=ssh.env,
        terminal=terminal,
    )


def _local_shell(host: HostConfig, session: str, terminal: bool) -> ShellCommand:
    """A login shell in the workdir on this machine, or the queue's tmux session (only
    with a terminal: a script's input goes to the plain shell, as on a box)."""
    workdir = Path(host.workdir).expanduser()
    note = ""
    if not workdir.is_dir():
        note = f"rgt-tui: the workdir {host.workdir} does not exist here; in ~ instead"
        workdir = Path.home()
    login = (os.environ.get("SHELL") or "/bin/sh", "-l")
    if not terminal:
        return ShellCommand(host.name, login, session, workdir, note, terminal=False)
    tmux = shutil.which("tmux")
    if tmux is None or not _local_session(tmux, session):
        return ShellCommand(host.name, login, session, workdir, note)
    if os.environ.get("TMUX"):
        # Attaching from inside tmux nests it (tmux refuses), or loops when the queue's
        # session is on the very server rgt-tui runs under: say how to get there instead.
        note = (
            f"rgt-tui: the queue runs in tmux session {session}: tmux switch-client -t ={session}"
        )
        return ShellCommand(host.name, login, session, workdir, note)
    window = ("/bin/sh", "-c", queue_window_script(session))
    return ShellCommand(host.name, window, session, workdir, note)


def _local_session(tmux: str, session: str) -> bool:
    try:
        done = subprocess.run(
            [tmux, "has-session", "-t", f"={session}"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_TMUX_CHECK_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@contextlib.contextmanager
def keys_to_the_shell() -> Iterator[None]:
    """While the shell runs, Ctrl-C / Ctrl-\\ / Ctrl-Z reach the shell, not rgt-tui.

    A handler that does nothing (not SIG_IGN, which a child would inherit: exec resets a
    caught signal to its default, so the shell gets the keys as usual). Signal handlers
    belong to the main thread: elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.getsignal(s) for s in _KEY_SIGNALS}
    for s in _KEY_SIGNALS:
        signal.signal(s, _ignore)
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)


def _ignore(signum: int, frame: object) -> None:
    """The shell's key, not ours (see ``keys_to_the_shell``)."""


def run_attached(command: ShellCommand, *, pause_on_failure: bool = False) -> int:
    """Run the shell with this terminal attached; its exit status (ssh's).

    ``pause_on_failure``: when ssh could not connect (255), wait for Enter so its message
    can be read before rgt-tui's screen comes back over it."""
    # First a line that says which box this is: the terminal still shows what came
    # before the TUI (a previous shell's last lines, another box's prompt) above it.
    print(f"\nrgt-tui: {command.describe()}", file=sys.stderr, flush=True)
    if command.note:
        print(command.note, file=sys.stderr, flush=True)
    try:
        env = None if command.env is None else dict(command.env)
        code = subprocess.run(command.argv, cwd=command.cwd, env=env).returncode
    except OSError as exc:
        print(f"rgt-tui: cannot start {command.argv[0]}: {exc}", file=sys.stderr, flush=True)
        code = SSH_FAILED
    if pause_on_failure and code == SSH_FAILED and sys.stdin.isatty():
        print(
            f"rgt-tui: ssh to {command.host} failed (exit {code}); Enter goes back",
            file=sys.stderr,
            flush=True,
        )
        with contextlib.suppress(OSError, EOFError):
            sys.stdin.readline()
    return code
