"""The keys a first launch needs, asked by ``rgt-tui add`` and the add screen (issue 43):
``workdir``, ``code``, ``queue``, ``run``, ``durable_dir`` and ``pull``.

``launch_defaults`` gives what is offered (Enter takes it): the platform profile's
folders (``suggested_workdir`` / ``suggested_durable_dir`` in ``rgt_tui/profiles/``,
the one place they are written), ``pull`` = ``[durable_dir]`` as the fleet file's own
default, the queue file ``queues/<name>.txt`` beside the fleet file, the run template
``DEFAULT_RUN``, and as ``code`` ``code_offer``'s: the git work tree the command runs in
(none when there is none, when ``[fleet] code`` is set, or when it is a checkout of
rgt-tui, where ``make run`` starts it from).

Each ``read_*`` checks one typed value with the fleet file's own parser (a block of that
key alone, parsed as the fleet file would be), so a bad ``run`` template is refused with
the parser's words before anything is written; AddRefused (``field`` = the key).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import tomlkit
import tomllib

from rgt_tui.domain.config import ConfigError, Fleet
from rgt_tui.domain.config_hosts import is_home
from rgt_tui.domain.config_parse import parse_fleet
from rgt_tui.profiles import KNOWN_PROFILES, profile
from rgt_tui.services.fleet.add_queue import fleet_queues, refuse_unfit_queue
from rgt_tui.services.fleet.append import AddRefused, LaunchKeys

__all__ = [
    "DEFAULT_RUN", "LAUNCH_KEYS", "LaunchKeys", "create_missing_queue", "create_queue_file",
    "code_offer", "launch_defaults", "read_launch_keys",
    "queue_path", "read_code", "read_folder", "read_pull", "read_queue", "read_run",
]  # fmt: skip

LAUNCH_KEYS = ("workdir", "code", "queue", "run", "durable_dir", "pull")
# Cells run in the workdir, so the template needs no `cd`; {cfg} is the queue line's path.
# python3: a bare Debian or Ubuntu box has no `python` (h522 #10); a venv or conda env
# has both.
DEFAULT_RUN = "python3 train.py --config {cfg} --out {out}"
NONE = ("none", "-")  # typed for code, queue or run: leave the key out
# A part of a suggested folder only the user knows ("/lambda/nfs/<filesystem>/runs").
_FILL_IN = re.compile(r"<[^<>]+>")
QUEUE_TEMPLATE = (
    "# rgt-tui queue for {name}: one cell per line, <config> <task> [epochs]\n"
    "#   configs/baseline.yaml   detection 20\n"
    "# A cell's name is its config's stem; {{out}} is <durable_dir>/<name>.\n"
    "# Check it with: rgt-tui queue check\n"
)


def launch_defaults(profile_name: str, name: str, code: Path | None) -> LaunchKeys:
    """What ``add`` offers a new host ``name`` of ``profile_name``; ``code`` is
    ``code_offer``'s, found once per add (the screen asks again at every keystroke of
    the name, and the answer only depends on where rgt-tui runs)."""
    facts = profile(profile_name)
    durable = facts.suggested_durable_dir
    return LaunchKeys(
        workdir=facts.suggested_workdir,
        durable_dir=durable,
        pull=(durable,),
        code=str(code) if code is not None else None,
        queue=f"queues/{name}.txt",
        run=DEFAULT_RUN,
    )


def code_offer(cwd: Path, fleet_code: Path | None) -> Path | None:
    """The code a new host is offered: none of its own when ``[fleet] code`` is set
    (``fleet_code``: the fleet's is the host's; a user's hour got the folder the app ran
    in written over it), else the git work tree ``cwd`` is in, unless that is a checkout
    of rgt-tui (its pyproject names it: `make demo` in a clone offered the clone)."""
    if fleet_code is not None:
        return None
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return None if _is_rgt_tui(folder) else folder
    return None


def _is_rgt_tui(folder: Path) -> bool:
    try:
        with (folder / "pyproject.toml").open("rb") as f:
            return tomllib.load(f).get("project", {}).get("name") == "rgt-tui"
    except (OSError, tomllib.TOMLDecodeError, AttributeError):
        return False


def _parser_says(key: str, value: object, fleet_path: Path) -> None:
    """AddRefused with the fleet file's own message when ``key = value`` would not load."""
    table = tomlkit.table()
    table.add("name", "new")
    table.add("ssh", "local")
    table.add(key, value)
    doc = tomlkit.document()
    doc.add("hosts", tomlkit.aot())
    doc["hosts"].append(table)  # type: ignore[union-attr]
    try:
        parse_fleet(fleet_path, tomlkit.dumps(doc), KNOWN_PROFILES)
    except ConfigError as exc:
        said = [p.message for p in exc.problems if p.key == key] or [exc.message]
        raise AddRefused(f"{key}: {said[0]}", _FIXES.get(key), field=key) from None


_FIXES = {
    "run": "e.g. python3 train.py --config {cfg} --out {out}",
    "workdir": "a folder on the box, e.g. /workspace/code",
    "durable_dir": "a folder on the box, e.g. /workspace/runs",
}


def read_folder(key: str, text: str, default: str, fleet_path: Path) -> str:
    """``workdir`` or ``durable_dir`` as typed (empty: ``default``); a suggested
    ``<part>`` left in is refused, naming it."""
    value = text.strip() or default
    blank = _FILL_IN.search(value)
    if blank is not None:
        raise AddRefused(
            f"{key} {value} still holds {blank.group()}",
            f"replace {blank.group()} with your own {blank.group()[1:-1]}",
            field=key,
        )
    _parser_says(key, value, fleet_path)
    return value


def read_pull(text: str, durable_dir: str, fleet_path: Path) -> tuple[str, ...]:
    """Folders on the box, comma-separated (empty: ``[durable_dir]``); a whole home is
    refused, as the fleet file refuses it (``config_hosts.is_home``)."""
    folders = tuple(p.strip() for p in text.split(",") if p.strip()) or (durable_dir,)
    for folder in folders:
        if _FILL_IN.search(folder):
            raise AddRefused(
                f"pull folder {folder} still holds {_FILL_IN.search(folder).group()}",  # type: ignore[union-attr]
                "write the folder in full",
                field="pull",
            )
        field = re.search(r"\{(cfg|task|epochs|name|out)\}", folder)
        if field:  # a run template typed one question late (hour s17b #13e)
            raise AddRefused(
                f"pull folder {folder!r} holds {field.group()}, a run template's field: "
                "pull takes folders on the box",
                "name the folders your results are in, e.g. ~/runs",
                field="pull",
            )
        if is_home(folder):
            default = "" if text.strip() else " (the default: durable_dir)"
            raise AddRefused(
                f"pull folder {folder}{default} is the whole home on the box: .ssh, the code, "
                "caches and rgt-tui's own records would come too",
                "name the folders your results are in, e.g. ~/runs",
                field="pull",
            )
    _parser_says("pull", list(folders), fleet_path)
    return folders


def read_code(text: str, default: str | None, fleet_path: Path) -> str | None:
    """The local code tree (empty: ``default``; ``none``: no sync); it must be a folder
    here (a relative path is from the fleet file's folder, as the fleet file reads it)."""
    value = text.strip() or default
    if value is None or value.lower() in NONE:
        return None
    _parser_says("code", value, fleet_path)
    folder = _local(value, fleet_path)
    if not folder.is_dir():
        raise AddRefused(
            f"code: {folder} is not a folder on this machine",
            "give the local folder `rgt-tui sync` sends to the box, or none",
            field="code",
        )
    return value


def read_queue(
    text: str,
    default: str | None,
    fleet_path: Path,
    *,
    others: Mapping[Path, str] | None = None,
) -> str | None:
    """The local queue file (empty: ``default``; ``none``: no queue); refused when it is
    a folder, or an existing file that does not read as this host's queue
    (``add_queue.refuse_unfit_queue``; ``others``, the fleet's queue files by host). A
    missing file is fine: ``create_queue_file`` offers one."""
    value = text.strip() or default
    if value is None or value.lower() in NONE:
        return None
    _parser_says("queue", value, fleet_path)
    where = _local(value, fleet_path)
    if where.is_dir():
        raise AddRefused(
            f"queue: {value} is a folder", "name a file, e.g. queues/a100.txt", field="queue"
        )
    refuse_unfit_queue(value, where, others=others or {})
    return value


def read_run(text: str, default: str | None, fleet_path: Path) -> str | None:
    """The run template (empty: ``default``; ``none``: no template), checked by the parser
    (fields, braces, quotes around a field)."""
    value = text.strip() or default
    if value is None or value.lower() in NONE:
        return None
    _parser_says("run", value, fleet_path)
    return value


def queue_path(queue: str, fleet_path: Path) -> Path:
    """Where the queue file ``queue`` (as written in the fleet file) is on this machine."""
    return _local(queue, fleet_path)


def create_queue_file(path: Path, name: str) -> bool:
    """Create ``path`` (and its folder) as an empty queue whose comments say how to write
    one; False when it already exists (never overwritten). OSError when it cannot."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(QUEUE_TEMPLATE.format(name=name))
    return True


def _local(text: str, fleet_path: Path) -> Path:
    path = Path(text).expanduser()
    return path if path.is_absolute() else fleet_path.absolute().parent / path


def read_launch_keys(
    values: Mapping[str, str], fleet_path: Path, fleet: Fleet | None = None
) -> LaunchKeys:
    """The add screen's fields (``LAUNCH_KEYS`` → text), each checked as ``add`` checks
    it, in the order shown; emptied, ``code``, ``queue`` and ``run`` are left out and
    ``pull`` is ``[durable_dir]``. ``fleet``: the fleet file as it is now (its hosts'
    queue files: another host's is refused). Blocking (it looks at local folders)."""
    workdir = read_folder("workdir", values.get("workdir", ""), "", fleet_path)
    code = read_code(values.get("code", ""), None, fleet_path)
    queue = read_queue(values.get("queue", ""), None, fleet_path, others=fleet_queues(fleet))
    run = read_run(values.get("run", ""), None, fleet_path)
    durable = read_folder("durable_dir", values.get("durable_dir", ""), "", fleet_path)
    pull = read_pull(values.get("pull", ""), durable, fleet_path)
    return LaunchKeys(workdir, durable, pull, code, queue, run)


def create_missing_queue(keys: LaunchKeys | None, name: str, fleet_path: Path) -> Path | None:
    """The host's queue file, created empty and commented when it is missing; None when
    the host names none or it exists. OSError when it cannot be created."""
    if keys is None or keys.queue is None:
        return None
    where = queue_path(keys.queue, fleet_path)
    return where if create_queue_file(where, name) else None
