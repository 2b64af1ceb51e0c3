"""Take a host's manifest: run the on-box script over the connection and read its lines.

The script (``rgt_tui/agent/manifest.py``) is sent the way the telemetry agent is:
``python3 -S -u - --root ...`` with the source on stdin, so nothing is installed on the box.
Every scan reports the box's id (``--box-id``), and the manifest carries the host key the
connection saw: a manifest belongs to one box (``rgt_tui.domain.box_identity``).
"""

from __future__ import annotations

import contextlib
import json
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.manifest import Manifest, ManifestError, parse_manifest_lines
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


def manifest_command(
    roots: Iterable[str],
    *,
    hash_files: bool = True,
    first_below: int = 0,
    share: bool = False,
    box_id: bool = False,
) -> str:
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
    if first_below:
        words += ["--first-below", str(first_below)]
    if share:
        words.append("--share")
    if box_id:
        words.append("--box-id")
    return " ".join(shlex.quote(w) for w in words)


async def take_manifest(
    host: HostConfig,
    transport: Transport,
    *,
    hash_files: bool = True,
    on_line: Callable[[int, int], None] | None = None,
    first_below: int = 0,
    on_first: Callable[[Listed], None] | None = None,
    on_listed: Callable[[int, int], None] | None = None,
    on_more: Callable[[Manifest], None] | None = None,
    on_share: Callable[[str | None], None] | None = None,
) -> Manifest:
    """List and hash every file under the host's pull roots, on the box.

    ``on_line(files, bytes)`` is called as the listing grows, for progress. With
    ``first_below``, files smaller than that are hashed first and ``on_first`` gets them
    (a partial manifest) with the count and bytes of everything listed, while the rest are
    still being hashed; before that, ``on_listed(small, files)`` says how many files are
    below ``first_below``, and how many there are in all, as soon as the walk is done;
    after it, ``on_more`` gets each further file as soon as the box has hashed it (a
    partial manifest of that one file). With ``on_share``, the box's python3 first
    shares a Unix socket for the pull's senders and ``on_share`` gets its path (None when
    it has none; also when the scan ends without saying). The transport must be
    connected. Raises
    TransportError when the box cannot run the script (the message says why: no python3,
    a dropped connection) and ManifestError when its output is incomplete.
    """
    lines: list[str] = []
    header: list[str] = []  # the start and root lines: what a one-file manifest needs
    files = total = 0
    listed = (0, 0)
    first_done = False
    command = manifest_command(
        host.pull,
        hash_files=hash_files,
        first_below=first_below,
        share=on_share is not None,
        box_id=True,
    )
    stream = transport.stream_lines(command, input=manifest_source())
    shared = on_share is None  # whether on_share has been told (or there is none)
    try:
        # aclosing: an error raised while reading (a garbled line) still ends the box's side.
        async with contextlib.aclosing(stream) as received:
            async for line in received:
                lines.append(line)
                if '"type": "file"' in line:
                    files += 1
                    total += _size_of(line)
                    if on_line is not None:
                        on_line(files, total)
                    if first_done and on_more is not None:
                        on_more(parse_manifest_lines(host.name, [*header, line], partial=True))
                elif not shared and '"type": "share"' in line:
                    shared = True
                    on_share(_shared_path(line))  # type: ignore[misc]
                elif '"type": "start"' in line or '"type": "root"' in line:
                    header.append(line)
                elif '"type": "listed"' in line:
                    listed, first = _listed(host.name, line)
                    if on_listed is not None:
                        on_listed(first, listed[0])
                elif '"type": "first_done"' in line:
                    first_done = True
                    if on_first is not None:
                        partial = parse_manifest_lines(host.name, lines, partial=True)
                        on_first(Listed(partial, *listed))
    except TransportError as exc:
        if "127" in exc.message:
            raise TransportError(
                host.name,
                "python3 not found on the box (the pull manifest needs it)",
                "install python3 on the box",
            ) from exc
        raise
    finally:
        if not shared:
            on_share(None)  # type: ignore[misc]
    try:
        manifest = parse_manifest_lines(host.name, lines)
    except ManifestError:
        raise
    except Exception as exc:  # a garbled line from a strange box must not crash the caller
        raise ManifestError(f"{host.name}: unreadable manifest output ({exc})") from exc
    # The key this very connection was made with: the box's id alone could be copied
    # with a disk image; the two together say which machine the listing came from.
    return replace(manifest, host_key=transport.host_key_fingerprint)


@dataclass(frozen=True)
class Listed:
    """What ``take_manifest`` knows early: the small files, hashed, and the totals."""

    first: Manifest  # the files below ``first_below`` (no ``done`` yet: a partial manifest)
    files: int  # regular files listed on the box, all sizes
    bytes: int


def _shared_path(line: str) -> str | None:
    try:
        path = json.loads(line).get("path")
    except (ValueError, AttributeError):
        return None
    return path if isinstance(path, str) and path else None


def _listed(host: str, line: str) -> tuple[tuple[int, int], int]:
    """((files, bytes), files below first_below) from a ``listed`` line."""
    try:
        obj = json.loads(line)
        return (int(obj["files"]), int(obj["bytes"])), int(obj.get("first", 0))
    except (ValueError, KeyError, TypeError) as exc:
        raise ManifestError(f"{host}: unreadable manifest output ({exc})") from exc


def _size_of(line: str) -> int:
    marker = '"size": '
    at = line.find(marker)
    if at < 0:
        return 0
    digits = line[at + len(marker) :].split(",", 1)[0].split("}", 1)[0]
    return int(digits) if digits.strip().isdigit() else 0
