"""A resume move: an unfinished cell goes to another box with its last verified checkpoint.

``rgt-tui queue move CELL --to HOST`` for a cell that ran and did not finish
(interrupted, killed, failed, preempted — or whose box no longer answers):

1. **Files**: the cell's files in the pulled copy here (``<results_dir>/<source>/…`` at
   the cell's ``{out}``), each pushed only when the last ``verify`` found it good for
   this very manifest AND it still hashes, here and now, to the manifest's SHA-256.
   Never the source box's unverified state (the box may be gone). A damaged copy, a
   leftover ``*.tmp``, a file verify did not pass: excluded, each with its reason.
2. **Checkpoint**: the newest good checkpoint among them (``domain.checkpoints``), with
   its step (name or sidecar), age, size, and the work a resume repeats (from its write
   to the cell's interruption). None: the move needs ``from_scratch`` — "from scratch:
   no verified checkpoint — the run starts over" — and pushes nothing.
3. **Push**: into a staging folder beside the target's durable dir (``resume_ctl.sh``),
   by SFTP over the target's connection (``Transport.put_file``), hashed on the target
   (``queue_ctl.sh code-hash``, as code sync checks its tree), then renamed to the cell's
   ``{out}`` there in one step. The target's free space is checked first.
4. **Queue**: the line moves as ``queue move`` moves it (``services.queue.move``; the
   source keeps ``#moved-to``), and the target runs it under the same name
   (``services.queue.resume_run``: appended to a running queue, else launched, from the
   target's own pending cells just before it), preflight and credentials as any launch;
   the plan says which, for this target. The run's load-latest-on-start makes the
   identical command resume.

A group target (one torchrun job over several boxes) has every rank's box asked for its
{out} and config, each problem naming the rank; a checkpoint is never pushed to one:
a push reaches one box, and every rank loads its own {out} (``group_resume_refusal``).

For ``on_preempt = "move"`` (``watch``): ``plan_resume_move`` then, when ``plan.ok``,
``resume_move``; both take the transports of both boxes and never raise for a box that
does not answer (the plan says so, the move raises ``MoveError``).

Over 450 lines on purpose: the four steps share the plan (the files and their reasons,
the checkpoint, the target's facts), and a reviewer checks that nothing unverified is
ever pushed by reading them in order; the line move itself is ``services.queue.move``'s.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from rgt_tui.domain.artifacts import GOOD_STATUSES, is_leftover
from rgt_tui.domain.checkpoints import (
    CellFile,
    damaged_checkpoints,
    is_checkpoint,
    newest_checkpoint,
    sidecar_of,
    sidecar_step,
    step_folders_left_out,
    step_in_name,
    unpushed_sidecars_left_out,
)
from rgt_tui.domain.config import Fleet, HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.domain.manifest import Manifest, ManifestError, verified_here
from rgt_tui.domain.manifest_refusals import TRANSIENT_REFUSAL, refusal_fix, unpulled
from rgt_tui.domain.preflight_checks import df_row
from rgt_tui.domain.queue_file import QueueCell, parse_queue_line
from rgt_tui.domain.queue_state import RUNNING
from rgt_tui.domain.roster import output_prefixes
from rgt_tui.domain.text import is_digits, printable, shell_word
from rgt_tui.domain.units import fmt_bytes, fmt_duration, local_time, plural
from rgt_tui.fsutil import NotThere, differs  # the gate re-checks its local copy so
from rgt_tui.services.box_ctl import QueueError
from rgt_tui.services.box_script import after_queue_ctl, box_refusal, run_box_script
from rgt_tui.services.journal import local_minute
from rgt_tui.services.queue.group.ranks import each_rank, rank_transports, reason, who
from rgt_tui.services.queue.move import (
    UNFINISHED,
    MoveError,
    MovePlan,
    MoveResult,
    PartlyMoved,
    apply_move,
    configs_warned,
    plan_lines,
    plan_move,
    refusals_first,
    run_moved_hint,
    still_as_planned,
)
from rgt_tui.services.queue.resume_run import GENERAL_RULE, plan_words, run_on_target
from rgt_tui.services.queue.resumed_record import record_resumed, resumed_from
from rgt_tui.services.queue.retried import set_aside_since
from rgt_tui.services.reclaimed import load_reclaimed
from rgt_tui.services.records import (
    RECORDS_DIR,
    REPLACED_DIR,
    fleet_host_dir,
    load_manifest,
    load_verification,
    pulled_cell_log,
)
from rgt_tui.transport import Transport

FROM_SCRATCH = "from scratch: no verified checkpoint — the run starts over"
# How a move from scratch is asked for, in the refusal of a cell with no verified
# checkpoint: the command line's flag; the dialog says its button (``resume_lines``).
SCRATCH_CLI = "move it with --from-scratch to run it again from the start"
SCRATCH_TUI = "press From scratch to run it again from the start"
# Free space the target keeps beyond the pushed files (a checkpoint being written next).
MARGIN_BYTES = 256 << 20
SIDECAR_MAX = 64 << 10  # a sidecar is a few numbers; a bigger one is not read
CTL_TIMEOUT_S = 60.0
HASH_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class ResumePlan:
    """What a resume move would do, or why it must not (``problems``)."""

    cell: str
    move: MovePlan
    files: tuple[CellFile, ...] = ()  # pushed
    excluded: tuple[CellFile, ...] = ()  # not pushed, each with its why
    checkpoint: CellFile | None = None
    step: int | None = None
    step_from: str = ""  # "its name" / "its sidecar NAME"
    from_scratch: bool = False
    status: str = ""  # the cell's state on the source box ("" unknown)
    interrupted_at: float | None = None  # box clock: the cell's end or last output
    pulled_at: float | None = None  # box clock: the manifest the files come from
    # The cell's {out} on the target, resolved there; the fleet file's words when the
    # target was not read (a refused plan: never a literal "{out}").
    target_out: str = ""
    target_free: int | None = None
    planned_at: float = 0.0  # this machine's clock
    # The cell ran (unfinished state, files pulled, or its box gone): its files go with
    # it and the target runs it. False: a plain move of a cell that never ran.
    ran: bool = False
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    # ``interrupted_at`` is its end record's time; False: only its last sign of life (its
    # log or newest output), so the run may have gone on after it, unrecorded.
    stopped_exact: bool = False
    # How the target will run the cell, read from its queue now (``resume_run``), and how
    # many of its own cells that never ran its launch runs first.
    runs_there: str = ""
    own_first: int = 0
    # The host whose pulled copy the files come from when it is not the source: the box
    # the cell ran on before a resume move to the source (``earlier_hop``); "" otherwise.
    files_from: str = ""

    @property
    def ok(self) -> bool:
        return self.move.ok and not self.problems

    @property
    def push_bytes(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def repeats_s(self) -> float | None:
        """Work the resume repeats: from the checkpoint's write to the interruption (or,
        when that is unknown, to now: an upper bound)."""
        if self.checkpoint is None:
            return None
        end = self.interrupted_at if self.interrupted_at is not None else self.planned_at
        return max(0.0, end - self.checkpoint.mtime)


@dataclass(frozen=True)
class ResumeResult:
    """A resume move done: the files pushed, the line moved, how the target runs it."""

    plan: ResumePlan
    moved: MoveResult
    out: str  # the cell's {out} on the target
    queued: str  # how the target runs it, in words


@dataclass
class _Target:
    home: str = ""
    durable: str = ""
    out: str = ""  # absent | empty | files | link | other
    out_files: int = 0
    free: int | None = None
    cfg_missing: str = ""  # where the target lacks the cell's config (asked: ``cfg``)
    problems: list[str] = field(default_factory=list)


# Why a pulled file the last verify did not cover is not pushed (how its reason starts).
NOT_VERIFIED_YET = "not verified for the last pull"


def cell_files(
    fleet: Fleet, source: HostConfig, name: str, now: float | None = None
) -> list[CellFile]:
    """Every file of cell ``name`` in ``source``'s pulled copy, with why it must not be
    pushed ("" when it may). Blocking (it re-hashes the copies): run it in a thread.
    ``now`` is accepted for callers of the first version; the re-hash needs no clock."""
    folder = fleet_host_dir(fleet, source)
    try:
        manifest = load_manifest(folder)
    except (ManifestError, OSError, ValueError):
        return []
    if manifest is None:
        return []
    record = load_verification(folder)
    same = isinstance(record, dict) and verified_here(record.get("manifest"), manifest)
    checks = {
        c["path"]: c
        for c in ((record or {}).get("checks") or ()) if same
        if isinstance(c, dict) and isinstance(c.get("path"), str)
    }  # fmt: skip
    prefixes = output_prefixes(manifest, source.durable_dir, name)
    set_aside = set_aside_since(folder, name, manifest.taken_at)
    files: list[CellFile] = []
    for entry in manifest.entries:
        local = manifest.local_relpath(entry.root, entry.path)
        prefix = next((p for p in prefixes if local.startswith(p + "/")), None)
        if prefix is None:
            continue
        rel = local[len(prefix) + 1 :]
        check = checks.get(local)
        why = ""
        if is_leftover(rel):
            why = "an unfinished write (*.tmp / *.part): never pushed"
        elif set_aside:
            why = set_aside
        elif not same:
            why = f"{NOT_VERIFIED_YET} — run rgt-tui verify {source.name}"
        elif check is None:
            why = "not in the verify record"
        elif check.get("status") not in GOOD_STATUSES:
            detail = printable(str(check.get("detail") or ""), 120)
            why = f"verify found it {printable(str(check.get('status')), 20)}: {detail}"
        elif check.get("sha256") not in (None, entry.sha256) or not entry.sha256:
            why = "verified as another version than the manifest's"
        else:
            said = _changed_here(folder, local, entry.size, entry.sha256 or "")
            if said:
                why = f"the copy here changed since it was verified ({said}): never pushed"
        files.append(CellFile(local, rel, entry.size, entry.mtime, entry.sha256 or "", why))
        if why and check is not None and not set_aside:
            files += _earlier_copy(folder, rel, check.get("earlier"))
    return files + _reclaimed_files(folder, manifest, prefixes, name)


def _reclaimed_files(
    folder: Path, manifest: Manifest, prefixes: Iterable[str], name: str
) -> list[CellFile]:
    """The cell's files a reclaim deleted on the box after they verified (``reclaimed``):
    the manifest no longer lists them, and the copies here are the only ones — as good a
    base for a resume as the manifest's, re-hashed now all the same. `disk --delete` of
    a failed cell's folder left its move refused: "the run wrote none" (s38 disk hour #1)."""
    try:
        recorded = load_reclaimed(folder, manifest.box_id)
    except ValueError:
        return []  # verify and the gate name the damaged record
    listed = {manifest.local_relpath(e.root, e.path) for e in manifest.entries}
    found = []
    for f in recorded:
        prefix = next((p for p in prefixes if f.local.startswith(p + "/")), None)
        if prefix is None or f.local in listed:
            continue
        rel = f.local[len(prefix) + 1 :]
        why = ""
        if is_leftover(rel):
            why = "an unfinished write (*.tmp / *.part): never pushed"
        elif later := set_aside_since(folder, name, f.mtime):
            # Its own write time: the record may outlive the manifest it was taken with,
            # and a retry since then discarded that attempt (the review of s38).
            why = later
        elif said := _changed_here(folder, f.local, f.size, f.sha256):
            why = f"the copy here changed since it was verified ({said}): never pushed"
        found.append(CellFile(f.local, rel, f.size, f.mtime, f.sha256, why))
    return found


def _repeats_line(plan: ResumePlan, ck: CellFile, repeats: str) -> str:
    """The work a resume from ``ck`` repeats, as exactly as the records know it."""
    if plan.interrupted_at is not None and plan.stopped_exact:
        return (
            f"repeats: {repeats} of work (checkpoint {local_time(ck.mtime)}, "
            f"{plan.cell} {plan.status or 'stopped'} {local_time(plan.interrupted_at)})"
        )
    if plan.interrupted_at is not None:
        # No end record (killed from outside, the box gone): its last sign of life is
        # often the checkpoint itself, and the run may have gone on unrecorded.
        return (
            f"repeats: at least {repeats} of work (checkpoint {local_time(ck.mtime)}; "
            f"{plan.cell}'s last sign of life {local_time(plan.interrupted_at)}, and it "
            "may have run on after it)"
        )
    return f"repeats: at most {repeats} of work (since the checkpoint, to now)"


def _earlier_lines(plan: ResumePlan, ck: CellFile, step: str, age: str, repeats: str) -> list[str]:
    """A resume from a damaged checkpoint's earlier copy: its write time on the box is not
    recorded, only that it was pulled at ``ck.mtime`` (this machine's clock)."""
    pulled = local_time(ck.mtime)
    lines = [
        f"checkpoint: your earlier copy of {ck.rel}{step} ({ck.local}; the newer one does not "
        f"load), pulled {pulled} ({age} ago) and written on the box before that, "
        f"{fmt_bytes(ck.size)} — verified here by loading it"
    ]
    if plan.interrupted_at is None:
        lines.append(
            f"repeats: unknown (written before {pulled}; when {plan.cell} stopped is not known)"
        )
    else:
        lines.append(
            f"repeats: at least {repeats} of work (written before {pulled}; {plan.cell} "
            f"stopped {local_time(plan.interrupted_at)})"
        )
    return lines


def _sidecar_left_out(folder: Path, files: list[CellFile], ckpt: CellFile) -> list[CellFile]:
    """``files`` with the sidecar of ``ckpt`` (an earlier copy) left out when it was
    written for another checkpoint (the newer, damaged one): beside the earlier copy it
    would say the wrong step. Blocking (it reads the sidecar)."""
    want = sidecar_of(ckpt.rel)
    out = []
    for f in files:
        if f.good and f.rel == want and not is_earlier_copy(f):
            try:
                with open(folder / f.local, "rb") as fh:
                    text = fh.read(SIDECAR_MAX).decode("utf-8", "replace")
            except OSError:
                text = ""
            if sidecar_step(text, ckpt.sha256) is None:
                f = replace(f, why=f"written for the newer {ckpt.rel}, not the earlier copy pushed")
        out.append(f)
    return out


def is_earlier_copy(f: CellFile) -> bool:
    """``f`` is a damaged checkpoint's earlier copy from ``.rgt/replaced/``."""
    return f.local.startswith(f"{RECORDS_DIR}/{REPLACED_DIR}/")


def _earlier_copy(folder: Path, rel: str, earlier: object) -> list[CellFile]:
    """The earlier copy of a damaged checkpoint that verify loaded (``.rgt/replaced/``,
    its record's ``earlier``), when it still hashes as verify saw it: a resume may start
    from it under the checkpoint's own name (hour s21a #2). Its mtime is this machine's,
    from when it was pulled: the box wrote it before that. Blocking."""
    if not isinstance(earlier, dict):
        return []
    local, sha, size = earlier.get("path"), earlier.get("sha256"), earlier.get("size")
    if not (isinstance(local, str) and isinstance(sha, str) and isinstance(size, int)):
        return []
    if not local.startswith(f"{RECORDS_DIR}/{REPLACED_DIR}/") or ".." in local.split("/"):
        return []  # the record names only rgt-tui's own set-aside copies
    try:
        pulled = os.lstat(folder / local).st_mtime
    except OSError:
        return []
    said = _changed_here(folder, local, size, sha)
    why = f"the earlier copy changed since verify loaded it ({said}): never pushed" if said else ""
    return [CellFile(local, rel, size, pulled, sha, why)]


def _changed_here(folder: Path, local: str, size: int, sha256: str) -> str:
    """ "" when ``local`` under ``folder`` is still the pulled file (re-hashed now, in
    full, never through a link: the gate's own check); else why not. Blocking."""
    try:
        root = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        return f"cannot open the results folder: {exc.strerror}"
    try:
        return differs(root, local, size, sha256) or ""
    except NotThere:
        return "not on this disk any more"
    finally:
        os.close(root)


def checkpoint_step(folder: Path, files: list[CellFile], ckpt: CellFile) -> tuple[int | None, str]:
    """The checkpoint's step, from its name or its (good) sidecar, and which said it
    ((None, "") when neither); ``folder``: the pulled copy ``files`` are in. Blocking."""
    step = step_in_name(ckpt.rel)
    if step is not None:
        return step, "its name"
    want = sidecar_of(ckpt.rel)
    side = next((f for f in files if f.rel == want and f.good and f.size <= SIDECAR_MAX), None)
    if side is None:
        return None, ""
    try:
        text = (folder / side.local).read_bytes().decode("utf-8", "replace")
    except OSError:
        return None, ""
    step = sidecar_step(text, ckpt.sha256)
    return (step, f"its sidecar {want}") if step is not None else (None, "")


async def _target_facts(
    transport: Transport, host: HostConfig, name: str, cfg: str | None = None
) -> _Target:
    """What ``host``'s box holds for cell ``name``: its {out}, free space and, with
    ``cfg``, whether the cell's config is there under its workdir."""
    facts = _Target()
    asked = (host.workdir, cfg) if cfg else ()
    try:
        await transport.connect()
        result = await run_box_script(
            transport, after_queue_ctl("resume_ctl.sh"), "resume_ctl", "target",
            host.durable_dir, name, *asked, timeout=CTL_TIMEOUT_S,
        )  # fmt: skip
    except TransportError as exc:
        facts.problems.append(
            f"{host.name} does not answer ({printable(exc.message, None)}): the files cannot "
            "be pushed there; try again when it answers, or name another host with --to"
        )
        return facts
    refused = box_refusal(result, f"{host.name}'s resume_ctl")
    if refused is not None:
        facts.problems.append(f"{host.name}: {refused.message}")
        return facts
    for line in result.stdout.splitlines():
        key, _, rest = line.partition("\t")
        if key == "home":
            facts.home = rest
        elif key == "durable":
            facts.durable = rest
        elif key == "out":
            kind, _, count = rest.partition("\t")
            facts.out = kind
            facts.out_files = int(count) if is_digits(count) else 0
        elif key == "df":
            row = df_row(rest)
            facts.free = int(row[3]) * 1024 if row is not None else None
        elif key == "cfg" and rest.startswith("absent\t"):
            facts.cfg_missing = rest.partition("\t")[2]
    return facts


def _out_problems(facts: _Target, name: str, where: str) -> list[str]:
    """Why the cell's {out} on the target (``where``: the host, or a group's rank) cannot
    take the run: it is no folder of its own, or it holds files a run would mix with."""
    out = f"{facts.durable.rstrip('/')}/{name}"
    if facts.out in ("link", "other"):
        return [f"{out} on {where} is a {facts.out}: the cell's {{out}} must be its own folder"]
    if facts.out == "files":
        return [
            f"{out} on {where} holds files already ({facts.out_files}+): a run there would "
            "mix them with the moved ones — move them aside first"
        ]
    return []


async def _group_facts(
    group: HostConfig, transport: Transport, name: str, cfg: str | None
) -> tuple[_Target, list[str]]:
    """Rank 0's facts (the group's folders as rank 0 resolves them) and every rank's
    problems, each naming the rank and its box: every rank runs the cell from its own
    {out} on its own box and needs its config there (h617 #1: a stale checkpoint in rank
    1's {out} passed unrefused, where its run would have loaded it)."""
    info = group.group
    assert info is not None
    # Each box as itself (its name in what it says) with the group's folders.
    boxes = [
        replace(box, workdir=group.workdir, durable_dir=group.durable_dir) for box in info.members
    ]
    async with rank_transports(group, transport, None) as links:
        got = await each_rank(links, lambda r, t: _target_facts(t, boxes[r], name, cfg))
    problems: list[str] = []
    for rank, facts in enumerate(got):
        rank_is = who(group, rank)
        if isinstance(facts, BaseException):
            problems.append(f"{rank_is}: {reason(facts)}")
            continue
        problems += [f"{rank_is}: {p}" for p in facts.problems]
        if cfg and facts.cfg_missing:
            problems.append(
                f"{rank_is}: "
                + config_missing_words(group, name, cfg, facts.cfg_missing, info.hosts[rank])
            )
        problems += _out_problems(facts, name, f"{rank_is} of {group.name}")
    lead = got[0]
    return (lead if isinstance(lead, _Target) else _Target()), problems


def group_resume_refusal(group: HostConfig, name: str) -> str:
    """Why a checkpoint is not pushed to a group: a push reaches one box, and every rank
    loads its own {out} (the simplest honest design, h617 #1: a push to rank 0 alone let
    rank 1 start over, or resume a stale checkpoint of its own, under the same job)."""
    assert group.group is not None
    return (
        f"{group.name} is a group: each of its ranks ({', '.join(group.group.hosts)}) runs "
        f"{name} from its own {{out}} on its own box, and a resume move pushes the "
        "checkpoint to one box — a rank without it would start over beside ranks that "
        f"resume. Move {name} to one box to resume it there (rgt-tui queue move "
        f"{shell_word(name)} --to HOST), or {SCRATCH_CLI}"
    )


def cell_config(move: MovePlan, name: str, host: HostConfig) -> str | None:
    """Cell ``name``'s config path as its queue line gives it, when ``host``'s run
    template uses it (``{cfg}``); None otherwise."""
    if "{cfg}" not in (host.run or ""):
        return None
    for c in move.cells:
        if c.name == name:
            cell = parse_queue_line(c.raw, file="", line=c.line, default_epochs=host.epochs)
            return cell.cfg if isinstance(cell, QueueCell) else None
    return None


def config_missing_words(
    target: HostConfig, name: str, cfg: str, where: str, box: str | None = None
) -> str:
    """The refusal of a move whose cell would fail at its start on ``target``: its
    config is not there (hour s21a #5: the plan passed, and the cell died on the target
    with FileNotFoundError, its config only ever on the preempted box). ``box``: the box
    of a group's rank that lacks it (the fix is still the group's)."""
    code = target.ready.code
    in_tree = (
        code is not None and not cfg.startswith(("/", "~")) and (code.expanduser() / cfg).is_file()
    )
    # A spare busy with its own queue refuses sync until that ends (s38 spot hour #7 was
    # sent to sync a box whose 1.4-hour cell ran): the other ways on are named too.
    fix = (
        f"rgt-tui sync {target.name} sends it with the code tree, then plan the move again "
        f"(while {target.name}'s own queue runs, sync is refused there: move to an idle "
        f"spare instead, or copy the file by hand with rgt-tui shell {target.name})"
        if in_tree
        else f"put it in {target.name}'s workdir ({target.workdir}), then plan the move again"
    )
    return (
        f"{printable(cfg)} is not on {box or target.name} ({printable(where)}): {name} would fail "
        f"at its start there — {fix}"
    )


async def _cell_state(
    source: HostConfig, transport: Transport, name: str
) -> tuple[str, float | None, bool]:
    """The cell's state on its box, when it stopped ("" / None when unknown), and whether
    that is its end record's time (else its last sign of life: a lower bound)."""
    from rgt_tui.services.queue.view import read_queue_view

    try:
        view = await read_queue_view(source, transport)
    except (TransportError, QueueError):
        return "", None, False
    for c in view.cells:
        if c.name == name:
            at = c.ended_at if c.ended_at is not None else c.last_output_at
            return c.status, None if at is None else float(at), c.ended_at is not None
    return "", None, False


async def plan_resume_move(
    fleet: Fleet,
    source: HostConfig,
    name: str,
    dest: str,
    source_transport: Transport,
    dest_transport: Transport,
    *,
    from_scratch: bool = False,
    now: float | None = None,
) -> ResumePlan:
    """Everything moving cell ``name`` from ``source`` to host ``dest`` with its verified
    files would do, and every reason it must not (see the module docstring)."""
    planned_at = time.time() if now is None else now
    move = await plan_move(fleet, source, [name], dest, source_transport, resume=True)
    if not move.cells:
        return ResumePlan(name, move, planned_at=planned_at)
    status, stopped, exact = "", None, False
    if move.source_answered:
        status, stopped, exact = await _cell_state(source, source_transport, name)
    files = step_folders_left_out(await asyncio.to_thread(cell_files, fleet, source, name))
    folder = fleet_host_dir(fleet, source)
    ran = status in UNFINISHED or not move.source_answered or bool(files)
    ckpt = newest_checkpoint(files)
    files_from, hop_note = "", ""
    # A checkpoint of the run here pulled and not verified yet keeps its own refusal and
    # fix: one verify away (the review of s38). One that is damaged here (it failed its
    # verify, or changed since) does not hide the verified checkpoint the run started
    # from, which the preemption notice already names (h614 #5: "no verified checkpoint
    # — --from-scratch" threw away 80 verified steps of the earlier box).
    waiting = any(is_checkpoint(f.rel) and f.why.startswith(NOT_VERIFIED_YET) for f in files)
    if ckpt is None and not from_scratch and not waiting:
        hop = await asyncio.to_thread(earlier_hop, fleet, source.name, name)
        damaged = damaged_checkpoints(files)
        if hop is not None and (not damaged or newest_checkpoint(hop[1]) is not None):
            files_from, files = hop[0], step_folders_left_out(hop[1])
            folder, ckpt, ran = (
                fleet_host_dir(fleet, fleet.host(files_from)),
                newest_checkpoint(files),
                True,
            )
            here = (
                f"{name}'s checkpoints of its run on {source.name} are damaged here "
                f"({'; '.join(f'{f.rel}: {f.why}' for f in damaged[:2])})"
                if damaged
                else f"nothing of {name}'s run on {source.name} is pulled and verified here"
            )
            hop_note = (
                f"{here}: it resumes from the checkpoint its move to {source.name} started "
                f"from, pulled and verified from {files_from} — the work done on "
                f"{source.name} since is done again"
            )
    if ckpt is not None and is_earlier_copy(ckpt):
        files = await asyncio.to_thread(_sidecar_left_out, folder, files, ckpt)
    files = unpushed_sidecars_left_out(files)
    good = [f for f in files if f.good]
    step, step_from = (None, "")
    if ckpt is not None:
        step, step_from = await asyncio.to_thread(checkpoint_step, folder, files, ckpt)
    problems: list[str] = []
    warnings: list[str] = []
    if ran and ckpt is None and not from_scratch:
        damaged = damaged_checkpoints(files)
        why = (
            "; ".join(f"{f.rel}: {f.why}" for f in damaged[:3])
            if damaged
            else f"none among {plural(len(files), 'file')} pulled and verified here"
            if files
            else await _nothing_pulled(fleet, source, source_transport, name, move.source_answered)
        )
        # A checkpoint pulled and not verified yet is one verify away: that comes first,
        # not a start over (h502 #4: the refusal led to --from-scratch, which would have
        # thrown away 2,400 steps that one `verify` then offered).
        unverified = any(f.why.startswith(NOT_VERIFIED_YET) for f in damaged)
        way_on = (
            f"verify it first (rgt-tui verify {source.name}), then plan the move again; "
            f"or, to start over, {SCRATCH_CLI}"
            if unverified
            else SCRATCH_CLI
        )
        problems.append(f"{name} has no verified checkpoint ({why}) — {way_on}")
    pushed = tuple(good) if ckpt is not None and not from_scratch else ()
    target = fleet.host(move.dest)
    if not ran and move.ok:  # a plain move of a line: its config is warned of, as a move's
        move = await configs_warned(move, target, dest_transport)
    facts = _Target()
    if ran and move.ok:
        cfg = cell_config(move, name, target)
        if target.group is None:
            facts = await _target_facts(dest_transport, target, name, cfg)
            problems += facts.problems
            if cfg and facts.cfg_missing:
                problems.append(config_missing_words(target, name, cfg, facts.cfg_missing))
            problems += _out_problems(facts, name, move.dest)
        else:
            facts, said = await _group_facts(target, dest_transport, name, cfg)
            problems += said
            if ckpt is not None and not from_scratch:
                problems.append(group_resume_refusal(target, name))
        need = sum(f.size for f in pushed) + (MARGIN_BYTES if pushed else 0)
        if facts.free is not None and pushed and facts.free < need:
            problems.append(
                f"{move.dest} has {fmt_bytes(facts.free)} free at {facts.durable}: the push needs "
                f"{fmt_bytes(need)} (files + {fmt_bytes(MARGIN_BYTES)} margin) — free space there first"
            )
    if hop_note:
        warnings.append(hop_note)
    runs_there, own_first = "", 0
    if ran and move.ok and not problems:
        runs_there, own_first = await plan_words(fleet, target, dest_transport, name)
    if not move.source_answered and ckpt is not None:
        warnings.append(
            f"{source.name} did not answer: when {name} stopped is unknown — the repeated work "
            "is counted up to now (at most)"
        )
    manifest_taken = None
    try:  # the source's own pull, whatever copy the files come from (a hop's)
        manifest = await asyncio.to_thread(load_manifest, fleet_host_dir(fleet, source))
        manifest_taken = manifest.taken_at if manifest is not None else None
    except (ManifestError, OSError, ValueError):
        pass
    if (
        move.source_answered
        and status != RUNNING  # refused as running: "it stopped 09:19" was false (h493 #7)
        and ckpt is not None
        and not from_scratch
        and stopped is not None
        and manifest_taken is not None
        and manifest_taken < stopped
    ):
        # The box answers and ran on after the last pull: a checkpoint it wrote since is
        # there only, and a resume from the one here repeats the difference (hour s34
        # TUI #3: 8 minutes repeated, the newer checkpoint one pull away). The box says
        # whether it wrote one: by the times alone, a run that saved none since was sent
        # to pull first for nothing (s43 spot hour #4). A hop's base is another box's.
        newer = None if files_from else await _newer_on_box(source_transport, source, name, ckpt)
        wrote = [rel for rel in newer or () if is_checkpoint(rel)]
        if newer is None or wrote:
            which = (
                f"the checkpoint it wrote since ({_paths(wrote)}) is"
                if wrote
                else "a checkpoint it wrote since may be"
            )
            warnings.append(
                f"{source.name} answers, and {name} ran on after the last pull here "
                f"({local_time(manifest_taken)}; it stopped {local_time(stopped)}): {which} "
                f"on {source.name} only — pull and verify {source.name} first (p, then v; or "
                "rgt-tui pull, then rgt-tui verify), then move it, to repeat less"
            )
    return ResumePlan(
        name, move, pushed if ran else (), tuple(f for f in files if not f.good),
        ckpt if ran else None, step, step_from, bool(from_scratch and ran), status, stopped,
        manifest_taken, f"{(facts.durable or target.durable_dir).rstrip('/')}/{name}",
        facts.free, planned_at, ran, tuple(problems), tuple(warnings), stopped_exact=exact,
        runs_there=runs_there, own_first=own_first, files_from=files_from,
    )  # fmt: skip


NEWER_LISTED = 500  # files the box lists as written after the checkpoint, at most


async def _newer_on_box(
    transport: Transport, host: HostConfig, name: str, ckpt: CellFile
) -> list[str] | None:
    """The files under cell ``name``'s {out} on ``host``'s box written after ``ckpt``
    (its mtime, the box's clock), newest first (relative paths, the box's text); None
    when the box could not say — no answer, a folder it could not list, or more than
    ``NEWER_LISTED`` files none of which is a checkpoint (one may be past the cut:
    review s44 #3)."""
    # A millisecond past it: the manifest's mtime is a double, which can fall below the
    # file's own nanoseconds, and the checkpoint itself then read as written after it.
    since = f"{ckpt.mtime + 0.001:.6f}"
    try:
        result = await run_box_script(
            transport, after_queue_ctl("resume_ctl.sh"), "resume_ctl", "newer",
            host.durable_dir, name, since, timeout=CTL_TIMEOUT_S,
        )  # fmt: skip
    except TransportError:
        return None
    if box_refusal(result, f"{host.name}'s resume_ctl") is not None:
        return None
    found = []
    for record in result.stdout.split("\0"):
        key, _, rest = record.partition("\t")
        mtime, _, rel = rest.partition("\t")
        if key == "newer" and rel and is_digits(mtime.replace(".", "", 1)):
            found.append(rel)
    if len(found) > NEWER_LISTED and not any(is_checkpoint(rel) for rel in found):
        return None
    return found


def _paths(rels: list[str]) -> str:
    """The first few paths, printable (the box's names), and how many more."""
    more = f" and {len(rels) - 3} more" if len(rels) > 3 else ""
    return ", ".join(printable(r, 200) for r in rels[:3]) + more


def earlier_hop(fleet: Fleet, host: str, name: str) -> tuple[str, list[CellFile]] | None:
    """The host whose verified copy a resume move pushed when it brought ``name`` to
    ``host`` (``record_resumed``), and that copy's files, when they still hold a
    checkpoint: the base the run on ``host`` started from. None when no resume move
    brought it (a plain move, or one from scratch: that checkpoint was declined), when a
    retry on ``host`` asked the cell to start over, or when the copy holds none now.
    Blocking: it re-hashes the copy.

    A second preemption, before anything of the run on ``host`` was pulled, offered only
    a start from scratch while the checkpoint it had resumed from lay verified here (s38
    spot hour #1); moving a pending cell on left the pushed checkpoint behind (#2)."""
    origin = resumed_from(fleet, host, name)
    if origin is None or origin == host or origin not in {h.name for h in fleet.hosts}:
        return None
    if set_aside_since(fleet_host_dir(fleet, host), name, 0.0):
        return None  # a retry there asked for a fresh start: not its base any more
    files = cell_files(fleet, fleet.host(origin), name)
    return (origin, files) if newest_checkpoint(files) is not None else None


async def _nothing_pulled(
    fleet: Fleet, source: HostConfig, transport: Transport, name: str, answers: bool
) -> str:
    """Why no checkpoint, when nothing of the cell is pulled here: pull and verify, unless
    the box itself holds no file under the cell's {out} (then pulling cannot help), or
    it does not answer (then it cannot be pulled: hour s24a #5 was told to pull a box
    that was down, for a cell that, as last pulled, had never started)."""
    folder = fleet_host_dir(fleet, source)
    try:
        pulled = await asyncio.to_thread(load_manifest, folder)
    except (ManifestError, OSError, ValueError):
        pulled = None
    refused = _refused_of(pulled, source, name) if pulled is not None else ""
    if answers:
        facts = await _target_facts(transport, source, name)
        if facts.out in ("absent", "empty"):
            out = f"{facts.durable.rstrip('/')}/{name}"
            return f"{source.name} holds no file under {out} either: the run wrote none"
        if refused:
            return refused
        return (
            f"nothing of {name} pulled here: rgt-tui pull {source.name}, then rgt-tui "
            f"verify {source.name}"
        )
    if refused:
        return refused
    started = await asyncio.to_thread((folder / pulled_cell_log(name, ".state")).exists)
    if pulled is not None and not started:
        return (
            f"as {source.name}'s records were last pulled ({local_minute(pulled.taken_at)}), "
            f"{name} had not started there; {source.name} does not answer, so nothing of it "
            "can be pulled now"
        )
    return (
        f"nothing of {name} pulled here, and {source.name} does not answer: pull and verify "
        "it once it answers"
    )


def _refused_of(pulled: Manifest, source: HostConfig, name: str) -> str:
    """Why nothing of ``name`` was pulled when the last pull refused its files for what a
    pull cannot get past (a name with a control character, an unreadable file, a link out
    of the root): another pull refuses them again, so the way on is the refusal's own fix
    (h541 #3: "pull, then verify" went round in a circle). "" when it refused none of
    them, or only a file caught mid-write, which the next pull brings (review h544 #2)."""
    prefixes = output_prefixes(pulled, source.durable_dir, name)
    refused = [
        r
        for r in unpulled(pulled)
        if not r.reason.startswith(TRANSIENT_REFUSAL)
        and any(pulled.local_relpath(r.root, r.path).startswith(p + "/") for p in prefixes)
    ]
    if not refused:
        return ""
    first = refused[0]
    more = f" and {plural(len(refused) - 1, 'more file')}" if len(refused) > 1 else ""
    return (
        f"the last pull of {source.name} refused {printable(first.path, 120)} "
        f"({printable(first.reason, 120)}){more} of {name}, and refuses it again until it "
        f"changes on the box: {refusal_fix(first.reason)} (rgt-tui pull {source.name} "
        f"names each; rgt-tui shell {source.name} opens a shell there), then rgt-tui "
        f"verify {source.name}"
    )


def resume_lines(plan: ResumePlan, scratch: str = SCRATCH_CLI) -> list[str]:
    """The plan in words (the CLI prints them, the dialog shows them); ``scratch``: how
    this front end asks for a move from scratch (the dialog: ``SCRATCH_TUI``)."""
    lines: list[str] = []
    ck = plan.checkpoint
    if plan.from_scratch and ck is not None:  # asked for with one here (the CLI's flag)
        lines.append(
            f"from scratch, as asked: the verified checkpoint {ck.rel} stays here and is not "
            "pushed — the run starts over"
        )
    elif plan.from_scratch:
        lines.append(FROM_SCRATCH)
    elif ck is not None:
        step = (
            f", step {plan.step} ({plan.step_from})" if plan.step is not None else ", step unknown"
        )
        age = fmt_duration(plan.planned_at - ck.mtime)
        repeats = fmt_duration(plan.repeats_s)
        if is_earlier_copy(ck):
            lines += _earlier_lines(plan, ck, step, age, repeats)
        else:
            lines.append(
                f"checkpoint: {ck.rel}{step}, written {local_time(ck.mtime)} ({age} ago), "
                f"{fmt_bytes(ck.size)} — pulled and verified here"
                + (f" (from {plan.files_from}, where it ran before)" if plan.files_from else "")
            )
            lines.append(_repeats_line(plan, ck, repeats))
    if plan.files:
        free = f"; {fmt_bytes(plan.target_free)} free there" if plan.target_free is not None else ""
        lines.append(
            ("push: " if plan.ok else "would push, were it not refused: ")
            + f"{plural(len(plan.files), 'file')} ({fmt_bytes(plan.push_bytes)}) to "
            f"{plan.move.dest}:{plan.target_out}, checked by SHA-256 there{free}"
        )
    elif plan.target_free is not None:
        lines.append(f"{plan.move.dest}: {fmt_bytes(plan.target_free)} free, nothing to push")
    for f in plan.excluded:
        lines.append(f"not pushed: {f.rel} — {f.why}")
    lines += plan_lines(plan.move, refused=not plan.ok)
    if plan.ok and plan.ran:
        lines.append(plan.runs_there or GENERAL_RULE.format(dest=plan.move.dest, cell=plan.cell))
    lines += [f"warning: {w}" for w in plan.warnings]
    lines += [f"REFUSED: {p.replace(SCRATCH_CLI, scratch)}" for p in plan.problems]
    return refusals_first(lines)


async def _push(
    plan: ResumePlan,
    fleet: Fleet,
    target: HostConfig,
    transport: Transport,
    on_bytes: Callable[[int], None] | None,
    token: str,
) -> str:
    """Stage, put, hash, rename; the cell's {out} on the target. MoveError on failure
    (the staging folder is removed; nothing is left at {out})."""
    from rgt_tui.services.code_sync.box import hash_on_box
    from rgt_tui.services.code_sync.types import SyncError

    ctl = after_queue_ctl("resume_ctl.sh")
    dirs = sorted({f.rel.rsplit("/", 1)[0] for f in plan.files if "/" in f.rel})
    where = f"{target.name}:{plan.target_out}"

    async def ctl_run(*args: str, input: str | None = None) -> str:
        result = await run_box_script(
            transport, ctl, "resume_ctl", *args, input=input, timeout=CTL_TIMEOUT_S
        )
        refused = box_refusal(result, f"{target.name}'s resume_ctl")
        if refused is not None:
            raise MoveError(f"{target.name}: {refused.message} — nothing was moved")
        return result.stdout

    try:
        await transport.connect()
        said = await ctl_run(
            "stage", target.durable_dir, token, input="".join(d + "\0" for d in dirs)
        )
        staged = next((ln[7:] for ln in said.splitlines() if ln.startswith("staged\t")), "")
        if not staged.endswith(f"/.rgt-resume.{token}"):
            raise MoveError(
                f"{target.name} did not say where it staged the files — nothing was moved"
            )
        folder = fleet_host_dir(fleet, plan.files_from or plan.move.source)
        for f in plan.files:
            await transport.put_file(
                folder / f.local, f"{staged}/{f.rel}", mode=0o644, on_bytes=on_bytes
            )
        rels = [f.rel for f in plan.files]
        try:
            seen = await hash_on_box(transport, target.name, staged, rels)
        except SyncError as exc:
            raise MoveError(f"cannot hash the pushed files on {target.name}: {exc}") from exc
        bad = [f.rel for f in plan.files if seen.files.get(f.rel) is None
               or seen.files[f.rel].sha256 != f.sha256]  # fmt: skip
        if bad:
            # The copy here may have changed under the push (it is read as it goes): that
            # is no transfer fault, and moving again would push it as it is now (s35
            # resume hour #7 was told the files "did not arrive whole").
            changed = [
                f"{f.rel} ({why})"
                for f in plan.files
                if f.rel in bad
                and (why := await asyncio.to_thread(_changed_here, folder, f.local, f.size, f.sha256))
            ]  # fmt: skip
            if changed:
                raise MoveError(
                    f"the copy here changed since the move was planned: {', '.join(changed[:3])}"
                    " — nothing was moved; pull and verify it again, then plan the move again"
                )
            raise MoveError(
                f"{plural(len(bad), 'pushed file')} did not arrive whole on {target.name} "
                f"({', '.join(bad[:3])}): SHA-256 differs — nothing was moved; move again"
            )
        said = await ctl_run("commit", target.durable_dir, plan.cell, token)
    except (TransportError, OSError, MoveError) as exc:
        left = ""
        try:
            await run_box_script(
                transport, ctl, "resume_ctl", "drop", target.durable_dir, token,
                timeout=CTL_TIMEOUT_S,
            )  # fmt: skip
        except Exception:  # noqa: BLE001 - the connection may be what failed
            left = (
                f"; its partial copy may stay in {target.name}:{target.durable_dir}/"
                f".rgt-resume.{token} (pulls skip it; a move there a day on removes it, "
                "or remove it by hand)"
            )
        if isinstance(exc, MoveError):
            raise MoveError(f"{exc}{left}") from exc
        why = printable(getattr(exc, "message", None) or str(exc), None)
        raise MoveError(
            f"the push to {where} failed ({why}) — nothing was moved; move again{left}"
        ) from exc
    out = next((ln[10:] for ln in said.splitlines() if ln.startswith("committed\t")), "")
    return out or plan.target_out


async def _take_back(
    exc: MoveError, plan: ResumePlan, target: HostConfig, transport: Transport, token: str
) -> str:
    """The refusal's text, once the copy this move pushed to the target is taken back
    (the cell never ran there: nothing else is in it); if it cannot be, where it stays."""
    where = f"{target.name}:{plan.target_out}"
    try:
        result = await run_box_script(
            transport, after_queue_ctl("resume_ctl.sh"), "resume_ctl", "takeback",
            target.durable_dir, plan.cell, token, timeout=CTL_TIMEOUT_S,
            input="".join(f.rel + "\0" for f in plan.files),
        )  # fmt: skip
        refused = box_refusal(result, f"{target.name}'s resume_ctl")
    except TransportError as err:
        refused = err
    if refused is None:
        return f"{exc}; the copy pushed to {where} was taken back"
    why = printable(getattr(refused, "message", None) or str(refused), 300)
    return (
        f"{exc}; the copy pushed to {where} could not be taken back ({why}): move it aside "
        "on the box before moving the cell there again"
    )


async def resume_move(
    plan: ResumePlan,
    fleet: Fleet,
    source: HostConfig,
    source_transport: Transport,
    dest_transport: Transport,
    *,
    acks: Iterable[str] = (),
    today: str | None = None,
    on_bytes: Callable[[int], None] | None = None,
) -> ResumeResult:
    """Do a planned resume move: push and check the files, move the line, run it there.

    MoveError (with what was done and how to finish) when a step fails; a push that
    fails changes nothing (no file, no line)."""
    if not plan.ok:
        raise MoveError("the move has problems:\n" + "\n".join(plan.problems or plan.move.problems))
    target = fleet.host(plan.move.dest)
    out = plan.target_out
    # What the move stands on, checked before the push too: a refusal after it left the
    # pushed files on the target, which refused every later move there (s35 resume #2).
    await still_as_planned(plan.move, source, source_transport)
    token = secrets.token_hex(6)
    if plan.files:
        out = await _push(plan, fleet, target, dest_transport, on_bytes, token)
    try:
        moved = await apply_move(plan.move, source, source_transport, today=today)
    except PartlyMoved as exc:
        if plan.files:  # the move is to be finished: its checkpoint stays for the run
            raise PartlyMoved(
                f"{exc}; the copy pushed to {target.name}:{out} stays there for the cell"
            ) from exc
        raise
    except MoveError as exc:
        if plan.files:
            raise MoveError(await _take_back(exc, plan, target, dest_transport, token)) from exc
        raise

    if plan.files and plan.checkpoint is not None:
        # What the run there starts from, and whose verified copy it is: a later move of
        # the cell, with nothing of its run there verified, resumes from it (earlier_hop).
        # A record that cannot be written costs that fallback only: said, not raised.
        ck = plan.checkpoint
        origin = plan.files_from or plan.move.source
        await asyncio.to_thread(record_resumed, fleet, target.name, plan.cell, origin, ck)
    if not plan.ran:  # a cell that never ran moves as `queue move` always moved cells
        return ResumeResult(plan, moved, out, run_moved_hint(target.name, 1))
    queued = await run_on_target(fleet, target, dest_transport, plan.cell, acks)
    return ResumeResult(plan, moved, out, queued)
