"""What tests share: every helper lives here once, never in a test module.

``pyproject.toml`` puts ``tests/`` on the import path, so any test imports
``from support.pilot import wait_for`` (or ``from support import FIXTURES``).

- ``waiting``: ``wait_for``, the one poll-until-true helper (plain or under the Pilot).
- ``machine``: this machine: processes (``alive``, ``children``), boot id, tmux, tmpfs.
- ``cli``: the real command line as a subprocess (``rgt``, ``arun``) and at a terminal.
- ``samples``: agent-shaped samples, the three-host fleet file and the frozen clock.
- ``pilot``: the App under the Pilot (``make_app``, ``screen_text``).
- ``replay``: ``ReplayMonitor``, the one replayed monitor (ready updates, or samples and
  lost connections emitted when the test says).
- ``controller_host``: ``LoopHost``, the one controller host without Textual.
- ``teardown_ui``: the pull → verify → checklist steps of the Teardown tab.
- ``fleet_files``: writing and editing fleet files (``write_hosts``, ``set_host_key``).
- ``gate``: a complete, unlocking sequence of gate facts.
- ``pulls``, ``queues``: pulls and queues over loopback boxes.
- ``sshd``: a real OpenSSH sshd on loopback.
- ``telemetry``: a HostMonitor watched from a test.
- ``tmux``: a private tmux server, for the app in a real terminal.
- ``import_contracts``: pyproject's import contracts run on a copy with a planted import.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
FIXTURES = ROOT / "tests" / "fixtures"  # recorded tool output (see each README.txt)
MIB = 1 << 20
GIB = 1 << 30
