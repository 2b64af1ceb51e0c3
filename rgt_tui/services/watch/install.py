"""How ``rgt-tui watch`` keeps running after you log out: the texts ``watch --install``
writes or prints — a systemd user unit, a launchd agent, a ``nohup`` line. Pure: the
command line decides where they go and says what it did; nothing here starts anything.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

UNIT_NAME = "rgt-tui-watch.service"
LAUNCHD_LABEL = "dev.rgt-tui.watch"


@dataclass(frozen=True)
class WatchCommand:
    """The watch command a service runs: this interpreter, the fleet file, the options."""

    python: str
    fleet: Path
    extra: tuple[str, ...] = ()

    @property
    def argv(self) -> list[str]:
        return [self.python, "-m", "rgt_tui", "watch", "--hosts", str(self.fleet), *self.extra]


def systemd_quote(arg: str) -> str:
    """One ExecStart argument as systemd reads it: ``%`` and ``$`` doubled (specifiers
    and variables), quoted when it holds a space, quote or backslash."""
    text = arg.replace("%", "%%").replace("$", "$$")
    if text and not any(c in text for c in " \t\"'\\"):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemd_unit(command: WatchCommand, env_file: Path) -> str:
    """A user unit that runs ``command``, restarted on failure; ``env_file`` (optional,
    ``KEY=value`` lines, mode 600) is where the notification targets' secrets go."""
    exec_start = " ".join(systemd_quote(a) for a in command.argv)
    return (
        "[Unit]\n"
        f"Description=rgt-tui watch: the fleet of {systemd_quote(str(command.fleet))}\n"
        "After=network-online.target\n"
        "Wants=network-online.target\n"
        "\n"
        "[Service]\n"
        f"ExecStart={exec_start}\n"
        "# Secrets for notify URLs (${VAR}): KEY=value lines, chmod 600; optional ('-').\n"
        f"EnvironmentFile=-{systemd_quote(str(env_file))}\n"
        "Restart=on-failure\n"
        "RestartSec=30\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


_DESCRIPTION = "Description=rgt-tui watch: the fleet of "


def unit_fleet(text: str) -> str | None:
    """The fleet file a unit ``systemd_unit`` wrote watches (from its Description line),
    None when the text is not such a unit."""
    for line in text.splitlines():
        if line.startswith(_DESCRIPTION):
            arg = line[len(_DESCRIPTION) :]
            if arg.startswith('"') and arg.endswith('"') and len(arg) >= 2:
                arg = re.sub(r"\\(.)", r"\1", arg[1:-1])
            return arg.replace("%%", "%").replace("$$", "$")
    return None


def fleet_unit_name(fleet: Path) -> str:
    """The unit of a second fleet's watch, beside the first's ``UNIT_NAME``: named after
    its folder, and the path's digest so two folders of one name differ
    (``rgt-tui-watch-proj-1a2b3c4d.service``)."""
    folder = re.sub(r"[^A-Za-z0-9_.-]+", "-", fleet.parent.name).strip("-.")[:40] or "fleet"
    digest = hashlib.sha256(str(fleet).encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"rgt-tui-watch-{folder}-{digest}.service"


def systemd_enable_lines(unit: str = UNIT_NAME) -> list[str]:
    """The commands that start the unit now and at every login."""
    return [
        "systemctl --user daemon-reload",
        f"systemctl --user enable --now {unit}",
        f"journalctl --user -u {unit} -f    # its output",
        "loginctl enable-linger $USER    # keep it running while you are logged out",
    ]


def launchd_plist(command: WatchCommand, log: Path) -> str:
    """A launchd agent (macOS) running ``command``, restarted when it exits."""
    args = "".join(f"    <string>{escape(a)}</string>\n" for a in command.argv)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" '
        '"http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
        '<plist version="1.0">\n<dict>\n'
        f"  <key>Label</key><string>{LAUNCHD_LABEL}</string>\n"
        f"  <key>ProgramArguments</key>\n  <array>\n{args}  </array>\n"
        "  <key>RunAtLoad</key><true/>\n"
        "  <key>KeepAlive</key><true/>\n"
        f"  <key>StandardOutPath</key><string>{escape(str(log))}</string>\n"
        f"  <key>StandardErrorPath</key><string>{escape(str(log))}</string>\n"
        "</dict>\n</plist>\n"
    )


def nohup_line(command: WatchCommand, log: Path) -> str:
    """A shell line that keeps ``command`` running after the terminal closes."""
    return f"nohup {shlex.join(command.argv)} >> {shlex.quote(str(log))} 2>&1 &"


def command_line(argv: Sequence[str]) -> str:
    """``argv`` as one shell line (for messages)."""
    return shlex.join(argv)
