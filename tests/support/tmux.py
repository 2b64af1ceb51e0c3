"""A private tmux server (its own socket): the app in a real terminal, read off the screen."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

from support.waiting import wait_for


class Tmux:
    """A private tmux server (its own socket) running one command in one pane."""

    def __init__(self, folder: Path) -> None:
        self.socket = f"rgt-test-{uuid.uuid4().hex[:8]}"
        self.conf = folder / "tmux.conf"
        # Keep the pane after the command exits so a failure's last screen can be read.
        self.conf.write_text("set -g remain-on-exit on\nset -g history-limit 200\n")

    def __call__(self, *args: str) -> str:
        result = subprocess.run(
            ["tmux", "-L", self.socket, "-f", str(self.conf), *args],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        return result.stdout

    def start(self, command: str, env: dict[str, str], cwd: Path) -> None:
        """Run ``command`` in a 160x50 pane of a new session "demo"."""
        # The pane inherits the server's environment; the server is started with `env`.
        # Without COLUMNS/LINES: pytest-xdist's workers set them to 80x24, and the app
        # (shutil.get_terminal_size) would take them over the pane's real 160x50.
        env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
        subprocess.run(
            ["tmux", "-L", self.socket, "-f", str(self.conf), "new-session", "-d",
             "-s", "demo", "-x", "160", "-y", "50", command],
            env=env, cwd=cwd, check=True, timeout=60,
        )  # fmt: skip

    def screen(self) -> str:
        """The pane's text as it shows now."""
        return self("capture-pane", "-p", "-t", "demo")

    def send(self, *keys: str) -> None:
        """Type ``keys`` into the pane (tmux's key names: ``Enter``, ``C-c``, ``Right``)."""
        self("send-keys", "-t", "demo", *keys)

    async def shows(self, text: str, timeout: float = 60) -> None:
        """Wait until ``text`` is on the pane; a failure shows the pane as it was."""
        await wait_for(lambda: text in self.screen(), timeout, repr(text), show=self.screen)

    def pane(self, fmt: str) -> str:
        """A pane property (``#{pane_pid}``...)."""
        return self("display-message", "-p", "-t", "demo", fmt).strip()

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=60)
