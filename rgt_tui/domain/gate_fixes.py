"""What settles each locked teardown-gate condition, in the words of the front end asking.

Every locked line of the checklist names the command (``rgt-tui teardown --check``) or
the key (the TUI's Teardown tab) that settles it, with the real cell names where cells
must be acknowledged (``Condition.settle``). Pure text: the CLI and the TUI call
``fixes(conditions, host, tui=...)`` and show each under its line.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from rgt_tui.domain.teardown_gate import (
    CELL_RUNS,
    GROUP_CELL,
    GROUP_ROSTER,
    MOVE_NOT_ON_RECORD,
    NAME_TWICE,
    NO_MANIFEST,
    NOT_ANSWERING,
    NOT_VERIFIED,
    QUEUE_UNREAD,
    SCAN_GARBLED,
    Condition,
    shown_paths,
)
from rgt_tui.domain.text import printable, shell_word

# What each condition needs, said as a requirement: a checklist line reads "what must
# hold │ found: what was found" (the evidence), so a locked line never reads as a
# contradiction ("verify found no problem: 1 problem").
NEEDS = {
    "box": "the box answering is the one recorded",
    "manifest": "a manifest taken after the last write",
    "rescan": "a fresh re-scan matches it",
    "pulled": "every file pulled, SHA-256 matching",
    "local": "the local copy re-hashed now, unchanged",
    "loaded": "every loadable artifact loads",
    "verified": "verify finds no problem",
    "roster": "every cell has results, or is accepted",
    "idle": "no cell running, or each accepted",
    "unfinished": "the cell finished, moved or accepted",
    "moved": "moved to another host",
    "jobs": "every Slurm job of the queue ended",
    "group": "no cell of a running group on this box, and its files here, hash-checked",
    "members": "a box (a group's boxes each have their own gate)",
    "account": "no other entry logs in to this account",
    "confirmed": "the host's name typed",
    "journal": "the journal readable",
}
FOUND = " │ found: "  # between what a condition needs and what was found


def needs(key: str) -> str:
    """What condition ``key`` needs, in words (its key where none is written)."""
    return NEEDS.get(key, key)


def _cells(condition: Condition) -> str:
    return ", ".join(printable(c, 200) for c in condition.settle)


def _bare(action: str) -> str:
    """``run `rgt-tui pull box1``` / ``Esc, then p to pull`` without its verb."""
    return action.removeprefix("run ").removeprefix("press ").removeprefix("Esc, then ")


def fix(
    condition: Condition,
    host: str,
    *,
    tui: bool,
    running: Collection[str] = (),
    pending: Collection[str] = (),
) -> str:
    """How to settle ``condition`` for ``host`` ("" when it holds or nothing settles it).
    ``running``, ``pending``: the cells the checklist's other lines know to run, or to
    wait in a queue that runs (``Condition.running``, ``pending``; ``fixes`` gathers them):
    no acknowledgement as missing is offered for them."""
    if condition.ok:
        return ""
    if tui:
        # Ctrl+R, not t: it re-checks from inside the name box too, where t is a letter.
        # p and v are letters there as well (the cursor is in it after t): "press p" made
        # the name 'p' (hour s17a #8). Esc leaves for the fleet, where p and v act on the
        # same host, from any tab.
        pull, verify = "Esc, then p to pull", "Esc, then v to verify"
        check = "press Ctrl+R to re-check"
    else:
        pull = f"run `rgt-tui pull {host}`"
        verify = f"run `rgt-tui verify {host}`"
        check = f"run `rgt-tui teardown {host} --check`"
    key = condition.key
    if key == "jobs" and condition.cause == QUEUE_UNREAD:
        return (
            "make squeue answer for a non-interactive login (is the slurm module loaded in "
            f"~/.bashrc? try `ssh {printable(host, 200)} squeue --me`), then "
            f"{_bare(check)}: the jobs cannot be cancelled before they can be read"
        )
    if key == "roster" and condition.cause == NOT_ANSWERING:
        # Which cells ran, run or were cut short there is unknown: accepting one as
        # missing is the last resort, not the fix.
        text = f"{check} once the box answers: which cells ran there is unknown until then"
        if condition.settle:
            # A box that may not come back (a preempted spot box): its cells can still run
            # elsewhere, which the only way on offered, "accept as lost", threw away (hour
            # s21a #11).
            first = shell_word(condition.settle[0])
            text += "; to run them on another box: " + (
                "the Queue tab's m moves a cell"
                if tui
                else f"`rgt-tui queue move {first} --to HOST`"
            )
            acks = " ".join(f"--ack-missing {shell_word(c)}" for c in condition.settle)
            text += f"; to accept {_cells(condition)} as lost anyway: " + (
                "type each name below and press Missing: accept"
                if tui
                else f"`rgt-tui teardown {host} {acks}`"
            )
        return text
    if key == "roster" and condition.cause == NAME_TWICE:
        return (
            "in the queue file, give the extra line a config of its own (a cell's name is "
            "its config's) and send it (append, while the queue runs; else launch), or "
            f"delete the line; then {_bare(check)}"
        )
    if key == "roster" and condition.settle:
        return _roster_fix(condition, host, tui=tui, running=running, pending=pending)
    if condition.cause == GROUP_CELL:
        # This box's own kill and --ack-running refuse a group's cell (hour s22b #5): the
        # job is stopped on every rank at once, from the group's name.
        then = "" if key == "idle" else f"; then {_bare(pull)}, {_bare(verify)} and {_bare(check)}"
        return (
            "the cell is its group's job on every box: the group line says how to end it "
            f"(a rank's own kill or acknowledgement refuses it){then}"
        )
    if key == "idle" and condition.settle:
        # Accepting a cell running settles this line alone: while it writes, no manifest
        # holds, so the lines on it wait for its end or a kill (hour s19a #8 read the ack
        # as the way on, and the gate stayed shut).
        # The caveat before the way: "to tear down with them running" read as the way on
        # and sent a user round the manifest line's "wait or kill" (h491 #3).
        alone = (
            "that settles this line only: while a cell still writes files, no pull can "
            "match the box, so the manifest line waits for its end, or a kill"
        )
        if tui:
            return (
                f"wait for {_cells(condition)} to finish, or kill it (Esc, Enter, 7 for "
                "the Queue tab, then X); one that writes nothing more can be accepted "
                "running (type each name under 'Acknowledge a cell by name' and press "
                f"Running: accept): {alone}"
            )
        acks = " ".join(f"--ack-running {shell_word(c)}" for c in condition.settle)
        return (
            f"wait for the cells to finish, or kill them (`rgt-tui queue kill {host}`); one "
            f"that writes nothing more can be accepted running (`rgt-tui teardown {host} "
            f"{acks}`): {alone}"
        )
    if key == "unfinished" and condition.settle:
        return _unfinished_fix(condition, host, tui=tui)
    if key == "members":
        boxes = ", ".join(printable(b, 200) for b in condition.settle)
        if tui:
            return f"select each box ({boxes}) and tear it down from its own Teardown tab"
        return "; ".join(f"run `rgt-tui teardown {printable(b, 200)}`" for b in condition.settle)
    if condition.cause == CELL_RUNS:  # rescan, and manifest, pulled, loaded with no manifest
        # The box answers: its running cell is what keeps the files changing.
        # In the TUI the cursor is in the name box, where 7, X, p and v are letters: the
        # Esc comes first (hour s19a #6: "p to pull again" lost it here, s17a #8's path).
        # Esc goes back to the fleet; Enter opens the host again on its Overview, where
        # 7 is the Queue tab ("Esc, then the Queue tab's X" left that out: a user's hour).
        # "kill", the action's own name: "stop it" beside `queue kill` read as `queue
        # stop`, which lets the cell run to its end (hour s31 CLI #14).
        stop = (
            "kill it (Esc, Enter, 7 for the Queue tab, then X)"
            if tui
            else f"kill it (`rgt-tui queue kill {host}`)"
        )
        return (
            f"wait for the running cell to end (the idle line names it), or {stop}; then "
            f"{pull}, {_bare(verify)} and {_bare(check)}"
        )
    if condition.cause == SCAN_GARBLED:
        return garbled_fix(host, tui=tui, then=_bare(check))
    if key == "rescan" and condition.cause == NO_MANIFEST:
        return f"{pull}, then {_bare(verify)}, then {_bare(check)}"
    if condition.cause == NO_MANIFEST:  # manifest; pulled, loaded, verified rest on it
        first = "" if key == "manifest" else " (the manifest line first)"
        return f"{pull}, then {_bare(verify)}{first}"
    if key == "pulled" and condition.cause == NOT_VERIFIED:
        # Its files may all be here already: verify counts them (and says what is not).
        return f"{verify} (a pull that did not finish: {_bare(pull)} first; it resumes)"
    if key in ("verified", "loaded") and condition.cause == NOT_VERIFIED:
        return verify  # nothing named yet: verify loads and names
    if key == "verified" and "refused" not in condition.evidence:
        return f"do what each problem verify named says, then {_bare(verify)}"
    if key == "loaded":
        return _loaded_fix(condition, host, tui=tui, pull=pull, verify=verify)
    if key == "local" and "deleted on the box by a reclaim" in condition.evidence:
        # A pull cannot bring back what a reclaim deleted on the box (hour s19a #1).
        ack = "type its name below and press Missing: accept" if tui else "--ack-missing CELL"
        return (
            "put back the files named, if you moved them (a reclaim deleted the box's "
            f"copies); to go on without them, accept their cell as missing ({ack}); a file "
            f"the box still has: {_bare(pull)}"
        )
    if key == "box" and "box not identified" in condition.evidence:
        # Never reached: no check can open this gate (hour s24b #7); what is left to do
        # when there is no box at all is to stop counting it.
        return (
            f"{check} once the box answers (is the fleet file's ssh address right?); if it "
            "never started, or is destroyed already — look in the provider's console: a box "
            "at a wrong address still bills — there is nothing to tear down: remove its "
            "[[hosts]] entry from the fleet file to stop watching it and counting its cost"
        )
    if key == "idle" and condition.cause == NOT_ANSWERING:
        return f"{check} once the box answers: what runs there is unknown until then"
    if key == "manifest" and "refused by the re-scan" in condition.evidence:
        # A pull refuses the same file again: "pull again" alone went round in a circle
        # (hour s24c #8). Its own fix is the pull's: rename it on the box.
        return (
            "rename on the box each file the re-scan refused to a plain name, or remove it, "
            f"then {_bare(pull)}, then {_bare(verify)}"
        )
    fixes = {
        "account": "remove one of the entries from the fleet file (keep the one whose queue "
        f"and results the box holds, and tear the box down under its name), then {_bare(check)}",
        "box": f"{check} once the box answers",
        "manifest": f"{pull}, then {_bare(verify)}",
        "rescan": f"{check} once the box answers (a changed box: pull and verify again)",
        "pulled": f"{pull} (it resumes), then verify",
        "local": f"{pull}: it fetches what is missing (move a changed file away first: "
        "the pull never overwrites it), then verify",
        "verified": "do what each problem verify named says (a file refused on the box: "
        f"rename or fix it there as its line says, then {_bare(pull)}), then {_bare(verify)}",
        "roster": verify,
        "confirmed": f"type '{host}' below"
        if tui
        else f"type '{host}' at the prompt, or pass `--confirm {host}`",
        "journal": "repair or move the journal file named above, then re-check",
        # Slurm: nothing is cancelled by the gate itself; scancel only after the typed name.
        # Not printed filled in: a pasted line is no typed confirmation, and it cancelled a
        # running cell with nothing pulled (hour s22b #1).
        "jobs": f"wait for the jobs to end, or cancel them with `rgt-tui teardown {host} "
        "--cancel-jobs HOSTNAME`, typing the host's name for HOSTNAME (scancel: a running "
        "cell loses its work since its last checkpoint, so pull first), then "
        f"{check.removeprefix('run ').removeprefix('press ')}",
    }
    return fixes.get(key, "")


# Each way a file fails to load, told by its line's words (verify's, services.verify):
# (kind, words its line holds, every one). The first that fits.
FAILURE_KINDS = (
    ("globals", ("Unsupported global: GLOBAL", "verify_safe_globals")),
    ("key", ("[fleet] verify_safe_globals:",)),
    ("torch", ("[fleet] verify_python",)),
    ("torch", ("importing torch",)),
    ("code", ("re-save it on the box as tensors",)),
    ("code", ("re-save its values on the box",)),
    ("code", ("needs arbitrary code to load",)),
    ("pickle", ("a plain pickle",)),
    ("damaged", ("truncated or damaged on the box",)),
)


def failure_kind(why: str) -> str:
    """The kind of a file's failure to load (``FAILURE_KINDS``), "other" when none fits."""
    return next((kind for kind, words in FAILURE_KINDS if all(w in why for w in words)), "other")


def _loaded_fix(condition: Condition, host: str, *, tui: bool, pull: str, verify: str) -> str:
    """The loaded line's fix, by each kind of failure among its files (all of them, not
    the three its evidence names): "fix or re-pull the files named" was said of a
    verify_python without torch and of a checkpoint that would run code, which no pull
    settles (h618 #4). One kind: its fix; several: each with the files it is for."""
    failures = condition.failures or (("", condition.evidence),)
    by_kind: dict[str, list[str]] = {}
    for path, why in failures:
        by_kind.setdefault(failure_kind(why), []).append(path)
    said = {kind: _kind_fix(kind, host, tui=tui, pull=pull, verify=verify) for kind in by_kind}
    if len(by_kind) == 1:
        return next(iter(said.values()))
    # Each fix opens on what is wrong ("a file names a class torch does not allow", "no
    # torch here can load it"): the files it is for come before it.
    return "; ".join(f"for {shown_paths(paths)}: {said[kind]}" for kind, paths in by_kind.items())


def _kind_fix(kind: str, host: str, *, tui: bool, pull: str, verify: str) -> str:
    """How to settle one kind of failure to load (``failure_kind``)."""
    shell = "s (a shell on the box)" if tui else f"`rgt-tui shell {host}`"
    if kind == "globals":
        return (
            "a file names a class torch does not allow: if you trust it, add it to [fleet] "
            f"verify_safe_globals as its line says, then {_bare(verify)}"
        )
    if kind == "key":
        return f"correct [fleet] verify_safe_globals in the fleet file as its line says, then {_bare(verify)}"
    if kind == "torch":
        # Nothing of the file is at fault: the interpreter that loads it is.
        return (
            "no torch here can load it (a pull brings the same bytes): point [fleet] "
            "verify_python in the fleet file at a python with torch>=2.6 (your training "
            f"environment's), or install torch>=2.6 into the one its line names, then {_bare(verify)}"
        )
    if kind == "code":
        # Never loaded here, and the same bytes come with every pull.
        return (
            "loading it would run code, never done here, and a pull brings the same bytes: "
            "re-save it on the box as tensors and plain values (a state_dict), or remove it "
            f"there ({shell}), then {_bare(pull)} and {_bare(verify)}"
        )
    if kind == "damaged":
        # A pull brings the same bytes: only the box's file changing settles it (hour
        # s23b #5: every fix offered looped back to pull and verify).
        retry = (
            "Esc, Enter, 7 for the Queue tab, then R"
            if tui
            else f"`rgt-tui queue retry {host} CELL`"
        )
        move = "the Queue tab's m" if tui else "`rgt-tui queue move CELL --to HOST`"
        return (
            "the box's own file is damaged: while its run still saves it, pull again once "
            f"it is saved; once the run ended, retry the cell ({retry}: its folder is set "
            f"aside and counts by its hash) or remove the file on the box ({shell}), then "
            f"{_bare(pull)} and {_bare(verify)}; a retry starts the cell over — to resume "
            f"it from an earlier copy verify kept, move it instead ({move}: its plan names "
            "the copy)"
        )
    if kind == "pickle":
        # A re-pull brings the same bytes (hour s20c #8): the file must change on the box.
        return (
            "a pull brings the same bytes: re-save the file on the box with torch.save (or "
            f"remove it there, in {shell}), then {_bare(pull)} and {_bare(verify)}"
        )
    return f"fix or re-pull the files named, then {_bare(verify)}"


def garbled_fix(host: str, *, tui: bool, then: str) -> str:
    """How to settle a scan whose output opened with text that is not the scan's
    (``teardown_gate.scan_garbled``): the text must go, on the box; ``then``: the step
    after it (the re-check, the pull or verify again). The gate, verify and the pull say
    it alike."""
    shell = "s (a shell on the box)" if tui else f"`rgt-tui shell {host}`"
    return (
        f"in a shell on the box ({shell}), `python3 -c pass` must print nothing: remove the "
        "text a shell startup file (~/.bashrc, ~/.zshenv) or that python3 prints, or print "
        f"it only in an interactive shell; then {then}"
    )


def _roster_fix(
    condition: Condition,
    host: str,
    *,
    tui: bool,
    running: Collection[str],
    pending: Collection[str],
) -> str:
    """Missing cells: run one never run, pull what one left, accept one not wanted; a cell
    that runs, or waits in a queue that runs, is told apart: its results may still come,
    and accepting it as missing is refused until it ended or its queue was stopped (h618
    #1: the line offered `--ack-missing cellD` of a running cell, refused in turn)."""
    pull = "Esc, then p to pull" if tui else f"`rgt-tui pull {host}`"
    verify = "v to verify" if tui else f"`rgt-tui verify {host}`"
    parts = []
    rest = tuple(c for c in condition.settle if c not in running and c not in pending)
    if rest:
        parts.append(_missing_fix(condition, rest, host, tui=tui))
    for cells, stop in (
        (
            [c for c in condition.settle if c in running],
            "kill it (Esc, Enter, 7 for the Queue tab, then X)"
            if tui
            else f"kill it (`rgt-tui queue kill {host}`)",
        ),
        (
            [c for c in condition.settle if c in pending and c not in running],
            "stop its queue before it (Esc, Enter, 7 for the Queue tab, then S)"
            if tui
            else f"stop its queue before it (`rgt-tui queue stop {host}`)",
        ),
    ):
        if not cells:
            continue
        names = ", ".join(printable(c, 200) for c in cells)
        now = "runs now" if stop.startswith("kill") else "waits to run in a queue that runs"
        accept = (
            "type its name under 'Acknowledge a cell by name' and press Missing: accept"
            if tui
            else f"`rgt-tui teardown {host} "
            + " ".join(f"--ack-missing {shell_word(c)}" for c in cells)
            + "`"
        )
        parts.append(
            f"{names} {now}, so its results may still come: wait for it to end, then "
            f"{pull} and {verify}, which count it; to go without them, {stop}, then "
            f"accept it as missing ({accept})"
        )
    return "; ".join(parts)


def _missing_fix(condition: Condition, cells: tuple[str, ...], host: str, *, tui: bool) -> str:
    """Missing cells (``cells``) that do not run: run one never run, pull what one left,
    or accept one not wanted, by name."""
    # A missing cell may never have run (appended, or after a stop): "pull the results
    # those cells left" was the only way on offered, and its ack threw away work never
    # done (hour s18a #10). Run it, pull what it left, or accept it as not wanted.
    launch = "the Queue tab's L to launch it" if tui else f"`rgt-tui launch {host}` to run it"
    if condition.cause == GROUP_ROSTER:  # a rank runs none of its own
        launch = "launch its group (the group line names it), which runs it on every rank"
    if tui:
        named = ", ".join(printable(c, 200) for c in cells)
        return (
            f"a missing cell ({named}) that never ran: {launch}; one that "
            "ran: pull what it left; one not wanted: type its name under 'Acknowledge "
            "a cell by name' and press Missing: accept"
        )
    acks = " ".join(f"--ack-missing {shell_word(c)}" for c in cells)
    return (
        f"a missing cell that never ran: {launch}; one that ran: `rgt-tui pull {host}` for "
        f"what it left; one not wanted: `rgt-tui teardown {host} {acks}`"
    )


def _unfinished_fix(condition: Condition, host: str, *, tui: bool) -> str:
    """An unfinished cell: move it (resuming from its verified checkpoint, or starting
    over without one), let it finish, or accept leaving it unfinished, by name."""
    cell, arg = _cells(condition), " ".join(shell_word(c) for c in condition.settle)
    if condition.cause == MOVE_NOT_ON_RECORD:
        # `queue move` refuses a cell whose line already reads #moved-to: the line must
        # become the plain line again before the move is made for real.
        move = (
            "if it did move, add its line to that host's queue file; otherwise turn its "
            "'#moved-to HOST: ' line back into the plain line and move it ("
            + ("Queue tab, m" if tui else f"`rgt-tui queue move {arg} --to HOST`")
            + ")"
        )
        accept = (
            f"type {cell} under 'Acknowledge a cell by name' and press Unfinished: accept"
            if tui
            else f"`rgt-tui teardown {host} --ack-unfinished {arg}`"
        )
        return f"{move} — or accept tearing down with its work unfinished: {accept}"
    if tui:
        move = (
            "move it (Queue tab, m): it resumes elsewhere from that checkpoint"
            if condition.checkpoint
            else "move it (Queue tab, m): it starts over elsewhere"
        )
        return (
            f"{move} — or type {cell} under 'Acknowledge a cell by name' and press "
            "Unfinished: accept, to tear down with its work unfinished"
        )
    if condition.checkpoint:
        move = f"`rgt-tui queue move {arg} --to HOST` resumes it elsewhere from that checkpoint"
    else:
        # A cell whose run began and left nothing verified moves only with --from-scratch.
        move = (
            f"`rgt-tui queue move {arg} --to HOST` plans it: from an earlier copy verify "
            "kept when there is one (its plan names it), else it starts it over elsewhere "
            "(`--from-scratch` once its run began: nothing verified to resume from)"
        )
    return (
        f"{move} — or accept tearing down with its work unfinished: "
        f"`rgt-tui teardown {host} --ack-unfinished {arg}`"
    )


def fixes(conditions: Iterable[Condition], host: str, *, tui: bool) -> list[str]:
    """``fix`` for each condition, in order, with a fix already said for an earlier line
    given as ``as for <that line>``: one running cell locks six lines with one fix, and
    the checklist said it six times over, 40 lines of the same words (a user's hour).
    The typed-name line has none: its box below is the way on."""
    conditions = tuple(conditions)
    running = {cell for c in conditions for cell in c.running}
    pending = {cell for c in conditions for cell in c.pending}
    said: dict[str, str] = {}  # a fix → the key of the first line it was said under
    out = []
    for c in conditions:
        settle = (
            "" if c.key == "confirmed" else fix(c, host, tui=tui, running=running, pending=pending)
        )
        if settle and settle in said:
            out.append(f"as for {said[settle]}")
            continue
        if settle:
            said[settle] = c.key
        out.append(settle)
    return out
