"""`rgt-tui add`: paste a provider's SSH command, check the box's host key, append it to
the fleet file (rgt_tui.services.fleet.add_host does the work; this asks and prints).

What is missing is asked for at a terminal (the target; the name, profile and cost with
their defaults offered; then what a first launch needs: workdir, code, queue, run,
durable_dir and pull, the profile's defaults offered, services.fleet.add_keys). Without a
terminal TARGET and ``--name`` must be given (the launch keys take their flags or the
defaults; a missing queue file is created, empty and commented), and an
unknown host key is trusted only with ``--trust-key FINGERPRINT`` matching it (or the
host opts into ``--accept-new``): otherwise exit 2, naming the flags. A pasted account
another entry already logs in to is said right after the paste, and added only when the
user says so (or ``--same-account``): a launch of either entry would be refused.

Every question comes before the first write: the box's host key, the ``[[hosts]]`` block
and the queue file are written only once the last one is answered, so a Ctrl-C at any
question leaves all three as they were and says so (130). Only a ProxyJump hop's key is
written at once: the box is reached through it; a Ctrl-C after that names it.

One module past 450 lines on purpose: the questions and their order are one conversation
(the work is services.fleet.add_host's).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from rgt_tui.cli.exit_codes import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_PROBLEMS
from rgt_tui.cli.prompt import ask
from rgt_tui.cli.runner import Call
from rgt_tui.domain.config_hosts import is_home
from rgt_tui.profiles import KNOWN_PROFILES
from rgt_tui.services.fleet.add_host import (
    AddRefused,
    FleetFile,
    KeyCheck,
    NewHost,
    Pasted,
    add_to_fleet,
    check_host_key,
    check_name,
    check_profile,
    fingerprint_matches,
    fleet_file_for_add,
    fleet_in_code,
    fleet_known_hosts,
    free_name,
    guess_profile,
    read_cost,
    read_fleet_file,
    read_target,
    render_block,
    same_account,
    suggest_name,
    trust_key,
)
from rgt_tui.services.fleet.add_keys import (
    DEFAULT_RUN,
    LaunchKeys,
    code_offer,
    create_queue_file,
    launch_defaults,
    queue_path,
    read_code,
    read_folder,
    read_pull,
    read_queue,
    read_run,
)
from rgt_tui.services.fleet.add_queue import fleet_queues

T = TypeVar("T")
MAX_HOPS = 4  # ProxyJump hops whose keys one `add` may settle before the box's own
TRIES = 3  # a value typed wrong is asked again, this many times in all


def add_add_arguments(parser: argparse.ArgumentParser) -> None:
    """TARGET, ``--name``, ``--profile``, ``--cost-per-hour``, the key options."""
    parser.add_argument(
        "target",
        metavar="TARGET",
        nargs="?",
        help="the provider's SSH command in quotes ('ssh -p 22034 root@ssh4.vast.ai -L ...') "
        "or user@host:port",
    )
    parser.add_argument("--name", help="host name (default: from the host, e.g. vast-22034)")
    parser.add_argument(
        "--profile",
        help=f"platform profile: {', '.join(KNOWN_PROFILES)} (default: from the host name)",
    )
    parser.add_argument("--cost-per-hour", metavar="DOLLARS", help="what the box costs per hour")
    parser.add_argument(
        "--identity-file", metavar="KEY", help="private key to log in with (or -i in TARGET)"
    )
    keys = parser.add_argument_group(
        "what a first launch needs (default: the profile's; `none` leaves code, queue or run out)"
    )
    keys.add_argument(
        "--workdir", metavar="DIR", help="on the box: code synced here, cells run here"
    )
    keys.add_argument(
        "--code", metavar="DIR", help="local code tree `sync` sends (default: this git tree)"
    )
    keys.add_argument(
        "--queue", metavar="FILE", help="local queue file (default: queues/NAME.txt, created)"
    )
    keys.add_argument(
        "--run", metavar="TEMPLATE", help=f"one cell's command (default: {DEFAULT_RUN})"
    )
    keys.add_argument(
        "--durable-dir", metavar="DIR", help="on the box: results, {out} = DIR/<cell>"
    )
    keys.add_argument(
        "--pull", metavar="DIR[,DIR]", help="folders on the box to pull (default: durable dir)"
    )
    parser.add_argument(
        "--same-account",
        action="store_true",
        help="add it even when another entry logs in to the same account (its status shows "
        "twice; a launch of either is refused: one account holds one queue)",
    )
    key = parser.add_mutually_exclusive_group()
    key.add_argument(
        "--trust-key",
        metavar="FINGERPRINT",
        help="trust the box's host key without asking, only if it is this SHA256:... fingerprint",
    )
    key.add_argument(
        "--accept-new",
        action="store_true",
        help='write host_key = "accept-new": the first key the box shows is recorded',
    )


def _ask(prompt: str, *, continued: bool = False) -> str | None:
    """A line typed at the terminal; None at end of input. ``continued``: a line ended by
    a backslash goes on on the next, as a shell reads it (a command a provider's page
    wraps, pasted whole: h555 #1); only the SSH command's and the run template's
    questions, where a backslash means that (review h556 #3: a name's stray one swallowed
    the next answer)."""
    answer = ask(prompt)
    while continued and answer is not None and answer.endswith("\\"):
        more = ask("", flush=False)  # the paste's next line is there already, echoed
        if more is None:
            break
        answer = f"{answer[:-1].rstrip()} {more}"
    return answer


def _value(
    call: Call,
    given: str | None,
    prompt: str,
    read: Callable[[str], T],
    *,
    tty: bool,
    continued: bool = False,
) -> T:
    """``read(given)`` when given (AddRefused escapes); else asked at the terminal, again
    after each wrong answer, up to TRIES times (``continued``: see ``_ask``)."""
    if given is not None or not tty:
        return read(given or "")
    for attempt in range(TRIES):
        answer = _ask(prompt, continued=continued)
        if answer is None:
            raise AddRefused("no answer (end of input)")
        try:
            return read(answer)
        except AddRefused as exc:
            if attempt == TRIES - 1:
                raise
            call.fail(exc.message, fix=exc.fix)
    raise AssertionError("unreachable")  # pragma: no cover


def run_add(call: Call) -> int:
    """Run `rgt-tui add` (see the module doc); exit codes as in exit_codes.py.

    Every question comes before the first write (the host key, the fleet file, the queue
    file), so a Ctrl-C at any of them leaves everything as it was, and says so."""
    written: list[str] = []  # what is on disk already, for a Ctrl-C's message
    try:
        return _add(call, written)
    except KeyboardInterrupt:
        call.err.print()  # the prompt's line holds the ^C: the message goes below it
        if not written:
            return call.fail("cancelled: nothing was written", code=EXIT_INTERRUPTED)
        return call.fail(
            f"cancelled: {'; '.join(written)}; nothing else was written", code=EXIT_INTERRUPTED
        )


def _add(call: Call, written: list[str]) -> int:
    """`add` itself; each write is noted in ``written`` as it is done."""
    args = call.args
    tty = sys.stdin.isatty()
    missing = [flag for flag, v in (("TARGET", args.target), ("--name", args.name)) if v is None]
    if missing and not tty:
        return call.fail(
            f"stdin is not a terminal, so there is no one to ask for {' and '.join(missing)}",
            fix="pass them: rgt-tui add 'ssh -p PORT user@host' --name NAME "
            "[--profile P] [--cost-per-hour X] [--trust-key SHA256:...]",
            code=EXIT_BAD_INPUT,
        )
    try:
        path = fleet_file_for_add(getattr(args, "hosts", None), os.environ, Path.cwd())
        fleet_file = read_fleet_file(path)
        pasted: Pasted = _value(
            call, args.target, "Paste the box's SSH command (or user@host:port): ", read_target,
            tty=tty, continued=True,
        )  # fmt: skip
        if args.name is not None:  # a name given that cannot be taken: said first, alone
            check_name(args.name, fleet_file)
    except AddRefused as exc:
        return call.fail(exc.message, fix=exc.fix, code=EXIT_BAD_INPUT)
    declined = _settle_same_account(call, same_account(pasted.target, fleet_file), tty)
    if declined is not None:
        return declined
    try:
        new = _new_host(call, fleet_file, pasted, tty)
    except AddRefused as exc:
        return call.fail(exc.message, fix=exc.fix, code=EXIT_BAD_INPUT)
    print(f"checking the host key of {new.ssh} …")
    for _ in range(MAX_HOPS + 1):
        check = asyncio.run(check_host_key(new))
        refused = _settle_key(call, check, tty, written)
        if refused is not None:
            return refused
        if check.error is None or check.error.jump_host is None:
            break
        # A jump host's key was trusted: connect again, to check the next one (the box's).
        print(f"checking the host key of {new.ssh} again, through the jump host …")
    try:
        if new.keys is None:
            new = replace(new, keys=_launch_keys(call, fleet_file, new.name, new.profile, tty))
    except AddRefused as exc:
        return call.fail(exc.message, fix=exc.fix, code=EXIT_BAD_INPUT)
    try:
        new = _name_still_free(call, new, path, tty)
    except AddRefused as exc:
        return call.fail(exc.message, fix=exc.fix, code=EXIT_BAD_INPUT)
    queue = _queue_to_create(new, path)
    # Every question is answered: now the writes, the host key first (as before: a key
    # that cannot be written adds nothing).
    if _box_key_to_trust(check):
        failed = _trust(call, check, written, check.host, "the box's key", check.fingerprint or "")
        if failed is not None:
            return failed
    try:
        host = add_to_fleet(_with_fingerprint(new, check), path)
    except AddRefused as exc:
        code = EXIT_BAD_INPUT if exc.field != "file" else EXIT_PROBLEMS
        if exc.field != "name":
            # The file broke (or changed) while the questions were answered: every answer
            # was lost (s37 fleet hour #11). The block, to paste once it loads again.
            block = render_block(_with_fingerprint(new, check))
            print(f"nothing was written; the block it would add, to paste once {path} loads:")
            print(block)
        return call.fail(exc.message, fix=exc.fix, code=code)
    written.append(f"{host.name} was added to {path}")
    # The price as read: "1,29" and "$1.29/h" are read, and a typo there bills unseen.
    price = "no price" if new.cost_per_hour is None else f"${new.cost_per_hour:g}/h"
    print(f"added {host.name} ({new.ssh}, {host.profile}, {price}) to {path}:{host.line}")
    if queue is not None:
        _create_queue(call, queue, new.name)
    warning = fleet_in_code(new.keys, path, _results_dir(path))
    if warning is not None:
        print(f"warning: {warning}")
    print(f"see it: rgt-tui status {host.name}{_hosts_flag(path)}  (or open rgt-tui)")
    if host.pull_refused:
        print(f'before pulling, name its result folders: pull = ["/workspace/runs"] in {path}')
    return EXIT_OK if check.status != "unreachable" else EXIT_PROBLEMS


def _settle_same_account(call: Call, note: str | None, tty: bool) -> int | None:
    """Say ``note`` (other entries log in to the pasted account) and ask whether to add
    another (default: no; ``--same-account``: yes); None when the add goes on, else the
    exit status. Asked before the name: a wrong paste costs no more questions."""
    if note is None:
        return None
    if call.args.same_account:
        print(f"warning: {note}")
        return None
    if not tty:
        return call.fail(
            f"{note}; stdin is not a terminal, so there is no one to confirm another entry",
            fix="paste another account's command, or pass --same-account to add it anyway "
            "(for status only)",
            code=EXIT_BAD_INPUT,
        )
    print(f"warning: {note}")
    if (_ask("Add another entry for this account anyway? [y/N] ") or "").lower() in ("y", "yes"):
        return None
    print("not added; nothing written")
    return EXIT_PROBLEMS


def _new_host(call: Call, fleet_file: FleetFile, pasted: Pasted, tty: bool) -> NewHost:
    """Every other value, given or asked for, checked; AddRefused for one that is wrong."""
    args = call.args
    identity = pasted.identity_file
    if args.identity_file is not None:
        if (
            identity is not None
            and Path(identity).expanduser() != Path(args.identity_file).expanduser()
        ):
            raise AddRefused(
                f"the pasted -i {identity} is not --identity-file {args.identity_file}",
                "keep one of them",
            )
        identity = args.identity_file
    name_default = suggest_name(pasted.target, fleet_file.names)
    name = _value(
        call,
        args.name,
        f"Name [{name_default}]: ",
        lambda text: check_name(text or name_default, fleet_file),
        tty=tty,
    )
    profile_default = guess_profile(pasted.target)
    profile = _value(
        call,
        args.profile,
        f"Profile ({', '.join(KNOWN_PROFILES)}) [{profile_default}]: ",
        lambda text: check_profile(text or profile_default),
        tty=tty,
    )
    cost = _value(
        call,
        args.cost_per_hour,
        "Cost per hour in dollars (empty: not known, alerts count it as billed; 0: free): ",
        read_cost,
        tty=tty,
    )
    return NewHost(
        name=name,
        target=pasted.target,
        profile=profile,
        cost_per_hour=cost,
        identity_file=identity,
        known_hosts=fleet_known_hosts(fleet_file),
        host_key="accept-new" if args.accept_new else "strict",
        pasted=pasted.text,
        # Without a terminal: checked before any connection (a bad flag changes nothing);
        # at one, asked once the host key is settled (see run_add).
        keys=None if tty else _launch_keys(call, fleet_file, name, profile, tty),
    )


def _name_still_free(call: Call, new: NewHost, path: Path, tty: bool) -> NewHost:
    """``new``, its name checked against the file as it is now: an edit or another add
    that took the name while the questions were answered refused the write, after the
    box's key was trusted, with every answer lost (h604 #4). At a terminal the name is
    asked again (its default queue file follows it); without one, AddRefused."""
    try:
        now = read_fleet_file(path)
    except AddRefused:
        return new  # a broken file: the write refuses it, and prints the block
    try:
        check_name(new.name, now)
        return new
    except AddRefused as exc:
        if not tty:
            raise
        call.fail(f"{exc.message} (taken while you answered)", fix=exc.fix)
    default = free_name(new.name, now.names)  # the one the refusal's fix offers (h606 #10)
    name = _value(
        call, None, f"Name [{default}]: ", lambda text: check_name(text or default, now), tty=tty
    )
    keys = new.keys
    if keys is not None and keys.queue == f"queues/{new.name}.txt":  # the offer, taken
        keys = replace(keys, queue=f"queues/{name}.txt")
    return replace(new, name=name, keys=keys)


def _launch_keys(
    call: Call, fleet_file: FleetFile, name: str, profile: str, tty: bool
) -> LaunchKeys:
    """workdir, code, queue, run, durable_dir and pull: given, asked (Enter: the default
    shown) or, without a terminal, the profile's defaults; each checked by the parser."""
    args, path = call.args, fleet_file.path
    fleet_code = fleet_file.fleet.ready.code if fleet_file.fleet is not None else None
    offer = launch_defaults(profile, name, code_offer(Path.cwd(), fleet_code))
    if tty:
        print(f"What a first launch needs ({profile}'s defaults: Enter takes the one shown):")

    def shown(value: str | None) -> str:
        return value if value is not None else "none"

    workdir = _value(
        call, args.workdir, f"Workdir on the box (code synced, cells run) [{offer.workdir}]: ",
        lambda text: read_folder("workdir", text, offer.workdir, path), tty=tty,
    )  # fmt: skip
    # With [fleet] code set, Enter writes no key of its own: the fleet's tree is the host's.
    code_shown = shown(offer.code) if fleet_code is None else f"the [fleet] code, {fleet_code}"
    code = _value(
        call, args.code, f"Local code tree to sync (none: no sync) [{code_shown}]: ",
        lambda text: read_code(text, offer.code, path), tty=tty,
    )  # fmt: skip
    queue = _value(
        call, args.queue, f"Queue file here (none: no queue) [{offer.queue}]: ",
        lambda text: read_queue(text, offer.queue, path, others=fleet_queues(fleet_file.fleet)),
        tty=tty,
    )  # fmt: skip
    # continued: a template pasted over lines (`… \`) is one command; its first line
    # alone was written, ending in a backslash (h619 #1).
    run = _value(
        call, args.run, f"Run template, fields bare [{offer.run}]: ",
        lambda text: read_run(text, offer.run, path), tty=tty, continued=True,
    )  # fmt: skip
    durable = _value(
        call, args.durable_dir, f"Durable dir on the box (results) [{offer.durable_dir}]: ",
        lambda text: read_folder("durable_dir", text, offer.durable_dir, path), tty=tty,
    )  # fmt: skip
    # A whole home is never pulled: then there is no default to offer, only an example.
    offered = "e.g. ~/runs; the durable dir is the whole home" if is_home(durable) else durable
    pull = _value(
        call, args.pull, f"Folders to pull, comma-separated [{offered}]: ",
        lambda text: read_pull(text, durable, path), tty=tty,
    )  # fmt: skip
    return LaunchKeys(workdir, durable, pull, code, queue, run)


def _queue_to_create(new: NewHost, path: Path) -> Path | None:
    """The new host's queue file when it is missing and should be made, empty and
    commented: asked at a terminal, made without asking when no one is there (it is new
    and empty). None: there is one, none is named, or the user said no."""
    queue = new.keys.queue if new.keys is not None else None
    if queue is None:
        return None
    where = queue_path(queue, path)
    if where.exists():
        return None
    if sys.stdin.isatty():
        answer = _ask(f"{where} does not exist: create it, empty, with how to write cells? [Y/n] ")
        if (answer or "").lower() not in ("", "y", "yes"):
            print(f"write {where} before launching: one cell per line, <config> <task> [epochs]")
            return None
    return where


def _create_queue(call: Call, where: Path, name: str) -> None:
    """Write the empty, commented queue file ``_queue_to_create`` settled on."""
    try:
        create_queue_file(where, name)
    except OSError as exc:
        call.fail(f"could not create the queue file {where}: {exc}", fix="create it by hand")
        return
    print(f"created {where}: one cell per line, <config> <task> [epochs]; then rgt-tui queue check")


def _box_key_to_trust(check: KeyCheck) -> bool:
    """Whether ``check`` ended on the box's own unknown key, which the user (or
    ``--trust-key``) accepted in ``_settle_key``: it is written with the host, after the
    last question. A jump host's key was written at once (the box is reached through it)."""
    return check.status == "unknown" and (check.error is None or check.error.jump_host is None)


def _settle_key(call: Call, check: KeyCheck, tty: bool, written: list[str]) -> int | None:
    """Accept an unknown key of the box when the user confirms (or ``--trust-key`` names
    it: written later, with the host: ``_box_key_to_trust``); None when the host may be
    added, an exit code when nothing is to be written. A jump host's key is written now
    (noted in ``written``)."""
    trust_given = call.args.trust_key
    if check.status in ("trusted", "local"):
        print(check.message)
        return None
    if check.status == "refused":
        call.fail(f"{check.host}: {check.message}", fix=check.fix)
        print("nothing written")
        return EXIT_PROBLEMS
    if check.status == "unreachable":
        call.fail(f"{check.host} unreachable: {check.message}", fix=check.fix)
        if tty and _ask("Add it anyway (its host key is checked when it answers)? [y/N] ") in (
            "y",
            "yes",
        ):
            return None
        print("nothing written")
        return EXIT_PROBLEMS
    if check.error is not None and check.error.jump_host is not None:
        return _settle_jump_key(call, check, check.error.jump_host, tty, written)
    fingerprint = check.fingerprint or ""
    print(f"unknown host key for {check.host}:")
    print(f"  fingerprint  {fingerprint}")
    print(f"  goes to      {check.known_hosts_file}")
    print(f"  line         {check.trust_line}")
    if trust_given is not None:
        if not fingerprint_matches(fingerprint, trust_given):
            call.fail(
                f"{check.host} shows {fingerprint}, not the {trust_given} given to --trust-key",
                fix="compare with the fingerprint your provider shows; nothing was trusted",
            )
            print("nothing written")
            return EXIT_PROBLEMS
    elif not tty:
        return call.fail(
            "stdin is not a terminal, so there is no one to confirm the unknown host key",
            fix=f"if {fingerprint} is the fingerprint your provider shows, pass "
            f"--trust-key '{fingerprint.split()[-1]}' (or --accept-new to record the first key)",
            code=EXIT_BAD_INPUT,
        )
    else:
        print("Trust it only if this is the fingerprint your provider shows for the box.")
        answer = (
            _ask("Trust this key? Type y or yes to trust; anything else cancels [N]: ") or ""
        ).lower()
        if answer not in ("y", "yes"):
            print("not trusted; nothing written")
            return EXIT_PROBLEMS
    return None


def _settle_jump_key(
    call: Call, check: KeyCheck, jump: str, tty: bool, written: list[str]
) -> int | None:
    """The unknown key is the ProxyJump hop's: it is trusted only with the jump host's
    name typed at a terminal (it is shared and long-lived; ``--trust-key`` names the
    box's key, never a jump host's). None once trusted."""
    fingerprint = check.fingerprint or ""
    print(
        f"unknown host key of the JUMP HOST {jump} (the ProxyJump that {check.host} is "
        "reached through), not of the box:"
    )
    print(f"  fingerprint  {fingerprint}")
    print(f"  goes to      {check.known_hosts_file}")
    print(f"  line         {check.trust_line}")
    if call.args.trust_key is not None or not tty:
        why = (
            f"--trust-key names the box's own key; this unknown key is the jump host {jump}'s"
            if call.args.trust_key is not None
            else f"stdin is not a terminal, so no one can type {jump} to trust the jump host's key"
        )
        call.fail(why, fix=check.fix)
        print("nothing written")
        return EXIT_BAD_INPUT
    print(
        f"Compare it with the jump host's own fingerprint (from whoever runs {jump}), "
        "not with the provider's fingerprint for the box."
    )
    answer = _ask(f"Type the jump host's name ({jump}) to trust its key; anything else cancels: ")
    if answer != jump:
        print("not trusted; nothing written")
        return EXIT_PROBLEMS
    return _trust(call, check, written, jump, f"the jump host {jump}'s key", fingerprint)


def _trust(
    call: Call, check: KeyCheck, written: list[str], who: str, whose: str, fingerprint: str
) -> int | None:
    """Write ``check``'s key to known_hosts and say so (``written`` keeps what was
    written, for a Ctrl-C later); the failure's exit status, else None."""
    try:
        known_hosts = trust_key(check)
    except (ValueError, OSError) as exc:
        return call.fail(f"{who}: could not trust {whose}: {exc}")
    written.append(f"{whose} was trusted in {known_hosts}")
    print(f"trusted {whose} {fingerprint} (added to {known_hosts})")
    return None


def _with_fingerprint(new: NewHost, check: KeyCheck) -> NewHost:
    """``new`` with the key seen at the check, for the block's comment."""
    return replace(new, fingerprint=check.fingerprint) if check.fingerprint else new


def _results_dir(path: Path) -> Path | None:
    """The fleet's ``results_dir`` as the file just written says (None: unreadable)."""
    from rgt_tui.domain.config import ConfigError
    from rgt_tui.services.fleet.file import load_fleet

    try:
        return load_fleet(path).results_dir
    except (ConfigError, OSError):
        return None


def _hosts_flag(path: Path) -> str:
    """`` --hosts PATH`` when a command run here would read another fleet file than
    ``path`` ($RGT_HOSTS, ./hosts.toml); "" when it reads this one (docs/fleet-file.md:
    suggested commands name no --hosts where none is needed; a new user's hour, s39 #7)."""
    from rgt_tui.domain.config import ConfigError
    from rgt_tui.services.fleet.file import resolve_fleet_path

    try:
        default = resolve_fleet_path(None, os.environ, Path.cwd())
    except ConfigError:
        default = None
    if default is not None and default.resolve() == path.resolve():
        return ""
    return f" --hosts {path}"
