"""Fleet files written and edited by tests, read back by the real loader."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from rgt_tui.domain.config import ConfigError
from rgt_tui.services.fleet.file import load_fleet


def write_hosts(directory: Path, text: str, name: str = "hosts.toml") -> Path:
    """Write ``text`` (dedented; its first line is line 1) as a fleet file; return its path."""
    path = directory / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load_error(directory: Path, text: str) -> ConfigError:
    """Load ``text`` as a fleet file and return the ConfigError it must raise (naming it)."""
    path = write_hosts(directory, text)
    with pytest.raises(ConfigError) as info:
        load_fleet(path)
    assert info.value.file == str(path)
    return info.value


def set_host_key(hosts_file: Path, key: str, value: str | None, host: str = "box1") -> None:
    """Set ``key`` of ``host`` in a fleet file of one key per line, such as the loopback
    fleets write (None: remove it); other hosts' lines stay as they are."""
    lines = hosts_file.read_text().splitlines()
    start = lines.index(f"name = {json.dumps(host)}")
    end = next((i for i in range(start, len(lines)) if lines[i] == "[[hosts]]"), len(lines))
    block = [ln for ln in lines[start + 1 : end] if not ln.startswith(f"{key} = ")]
    if value is not None:
        block.insert(0, f"{key} = {json.dumps(value)}")
    lines[start + 1 : end] = block
    hosts_file.write_text("\n".join(lines) + "\n")
