"""Take a host's manifest: run the on-box script over the connection and read its lines.

The script (``rgt_tui/agent/manifest.py``) is sent the way the telemetry agent is:
``python3 -S -u - --root ...`` with the source on stdin, so nothing is installed on the box.
Every scan reports the box's id (``--box-id``), and the manifest carries the host key the
connection saw: a manifest belongs to one box (``rgt_tui.domain.box_identity``).
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Callable, Iterable
from dataclasses import replace
from importlib import resources
from pathlib import Path

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.manifest import Manifest, ManifestError, ManifestLimits, parse_manifest_lines
from rgt_tui.transport.base import Transport, TransportError

MANIFEST_SCRIPT = "manifest.py"


def manifest_source() -> str:
    """The text of the on-box manifest script, as sent over the channel's stdin."""
    try:
        return resources.files("rgt_tui.agent").joinpath(MANIFEST_SCRIPT).read_text("utf-8")
    except (AttributeError, FileNotFoundError, TypeError):
        # A zipped or unusual install without the resources API: read beside the package.
        import rgt_tui.agent

        return (Path(rgt_tui.agent.__file__).parent / MANIFEST_SCRIPT).read_text("utf-8")


def manifest_command(roots: Iterable[str], *, hash_files: bool = True, box_id: bool = False) -> str:
    """The remote shell command that runs the script from stdin.

    Every word is ``shlex.quote``d: pull roots come from hosts.toml and pass through the
    remote shell, so a space or ``$(...)`` in one must stay a literal path. ``box_id``: the
    scan also reports the box's id, creating ``~/.rgt/box-id`` once (``take_manifest``
    always asks; off by default so a bare run of the script writes nothing in a home).
    """
    # -S: the script needs only the standard library, so no site-packages and none of
    # their .pth start-up hooks (16 ms per start here; more in a large conda environment).
    words = ["python3", "-S", "-u", "-"]
    for root in roots:
        words += ["--root", str(root)]
    if not hash_files:
        words.append("--no-hash")
    if box_id:
        words.append("--box-id")
    return " ".join(shlex.quote(w) for w in words)


async def take_manifest(
    host: HostConfig,
    transport: Transport,
    *,
    hash_files: bool = True,
    on_line: Callable[[int, int], None] | None = None,
) -> Manifest:
    """List and hash every file under the host's pull roots, on the box.

    ``on_line(files, bytes)`` is called as the listing grows, for progress. The transport
    must be connected. Raises TransportError when the box cannot run the script (the
    message says why: no python3, a dropped connection) and ManifestError when its output
    is incomplete or unusable.
    """
    lines: list[str] = []
    limits = ManifestLimits(host.name)  # a hostile box cannot make this hold more
    files = total = 0
    command = manifest_command(host.pull, hash_files=hash_files, box_id=True)
    stream = transport.stream_lines(command, input=manifest_source())
    try:
        # aclosing: an error raised while reading (a garbled line) still ends the box's side.
        async with contextlib.aclosing(stream) as received:
            async for line in received:
                limits.take(line)
                lines.append(line)
                if on_line is not None and '"type": "file"' in line:
                    files += 1
                    total += _size_of(line)
                    on_line(files, total)
    except TransportError as exc:
        if "127" in exc.message:
            raise TransportError(
                host.name,
                "python3 not found on the box (the pull manifest needs it)",
                "install python3 on the box",
            ) from exc
        raise
    try:
        manifest = parse_manifest_lines(host.name, lines)
    except ManifestError:
        raise
    except Exception as exc:  # a garbled line from a strange box must not crash the caller
        raise ManifestError(f"{host.name}: unreadable manifest output ({exc})") from exc
    # The key this very connection was made with: the box's id alone could be copied
    # with a disk image; the two together say which machine the listing came from.
    return replace(manifest, host_key=transport.host_key_fingerprint)


def _size_of(line: str) -> int:
    """The size in a file line, for progress only (the parser checks every value)."""
    marker = '"size": '
    at = line.find(marker)
    if at < 0:
        return 0
    digits = line[at + len(marker) :].split(",", 1)[0].split("}", 1)[0]
    return int(digits) if digits.strip().isdigit() else 0  # never negative
