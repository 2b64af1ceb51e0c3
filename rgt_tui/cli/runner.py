"""What a sub-command is (a ``Command`` row of table.py) and the one helper that runs it:
look up the host, open one connection (through the services, never the transport), run it
in an event loop, map errors to exit codes (exit_codes.py) and to one message with the fix.

A row's runner has one of two shapes, as its ``connects`` says:

- ``connects=True``: ``async def run(call, transport) -> int``, run on one connection to
  the host, opened here and closed after;
- ``connects=False``: ``def run(call) -> int``. Commands that reach boxes their own way
  use this: ``status`` samples every host at once, and ``launch`` / ``teardown`` ask a
  person with no connection open, taking one connection before the question and a fresh
  one after it, both through ``Call.on_host``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from rich.console import Console
from rich.text import Text

from rgt_tui.cli.args import UnknownHost, find_host, load_fleet_arg
from rgt_tui.cli.event_loop import run_async
from rgt_tui.cli.exit_codes import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_PROBLEMS
from rgt_tui.cli.fence import FencedConsole, unfenced
from rgt_tui.domain.config import ConfigError, Fleet, HostConfig
from rgt_tui.domain.errors import HostKeyError, NoAnswer, TransportError
from rgt_tui.services.connect import Transport, host_connection
from rgt_tui.services.fleet.file import no_fleet_file_note

T = TypeVar("T")
HostArg = Literal["none", "one", "optional", "one-or-all"]


def console(*, stderr: bool = False) -> Console:
    """Rich on stdout (or stderr): colour only on a terminal, NO_COLOR honoured (Rich
    decides); no markup, highlighting, emoji, wrapping or cropping, so text prints as
    written; fenced (fence.py): no control character in what it is given reaches the
    terminal, so a box string can neither drive the terminal nor be read as markup."""
    stream = unfenced(sys.stderr if stderr else sys.stdout)
    return FencedConsole(file=stream, markup=False, highlight=False, emoji=False, soft_wrap=True)


def stderr_console() -> Console:
    """``console(stderr=True)``: where messages and progress go."""
    return console(stderr=True)


@dataclass
class Call:
    """One run of a sub-command: its arguments, its fleet and host, where it reports."""

    args: argparse.Namespace
    name: str  # "queue show": the sub-command, for messages
    host_config: HostConfig | None = None
    err: Console = field(default_factory=stderr_console)
    # The fleet file's entries left out for their mistakes (``_despite_mistakes``): ``status``
    # then cannot say every host answered, and exits 1.
    # Entries left out for their mistakes: name → where (`` (lines 11 and 39)``, or "").
    left_out: dict[str, str] = field(default_factory=dict)

    @cached_property
    def fleet(self) -> Fleet:
        """Loaded on first use, so a command that needs none (demo) never reads it. With
        no fleet file, every command but the TUI (its banner says it) and add (it writes
        one) says so on stderr, once."""
        fleet = load_fleet_arg(self.args)
        if self.name in ("", "add", "demo"):
            return fleet
        if fleet.path is None:
            self.err.print(f"rgt-tui {self.name}: {no_fleet_file_note(Path.cwd())}")
        elif fleet.is_default:
            # A copy of hosts.example.toml with nothing uncommented read as a fleet of
            # one, unsaid (h581 #7).
            self.err.print(
                f"rgt-tui {self.name}: {fleet.path} names no [[hosts]] entry (every block "
                "commented out?): this machine stands in, as 'local' — uncomment or add one "
                "(rgt-tui add 'ssh -p PORT user@host' --name NAME)"
            )
        return fleet

    def use_fleet(self, fleet: Fleet) -> None:
        """Stand ``fleet`` in for the file's (its sound entries: ``_despite_mistakes``)."""
        self.__dict__["fleet"] = fleet  # where functools.cached_property keeps its value

    @property
    def host(self) -> HostConfig:
        """The host named on the command line (only rows with a host read it)."""
        if self.host_config is None:
            raise RuntimeError(f"rgt-tui {self.name} takes no host")
        return self.host_config

    def on_host(self, body: Callable[[Transport], Awaitable[T]]) -> T:
        """Run ``body`` on one connection to the host, in an event loop of its own.

        The transport connects when a service first needs it (``verify --offline``
        never does); TransportError escapes to ``run_command``, which reports it.
        """
        host = self.host

        async def session() -> T:
            async with host_connection(host) as transport:
                return await body(transport)

        return run_async(session())

    def fail(self, message: str, *, fix: str | None = None, code: int = EXIT_PROBLEMS) -> int:
        """Say on stderr what went wrong and, when known, the fix; returns ``code``."""
        prefix = f"rgt-tui {self.name}: " if self.name else "rgt-tui: "
        self.err.print(Text.assemble((prefix, "bold red"), message))
        if fix:
            self.err.print(Text.assemble(("  fix: ", "bold"), fix))
        return code


PlainRunner = Callable[[Call], int]
HostRunner = Callable[[Call, Transport], Awaitable[int]]


def exit_interrupted(call: Call) -> int:
    """Ctrl-C: 130, as a shell reports a command it stopped."""
    return EXIT_INTERRUPTED


def interrupted_saying(words: Callable[[str], str]) -> Callable[[Call], int]:
    """A command's Ctrl-C: ``HOST: interrupted; <words(HOST)>`` (what it left behind,
    and where to look), then 130."""

    def interrupted(call: Call) -> int:
        name = call.host.name
        call.fail(f"{name}: interrupted; {words(name)}")
        return EXIT_INTERRUPTED

    return interrupted


def no_arguments(parser: argparse.ArgumentParser) -> None:
    """For a command with no arguments of its own (``--hosts`` and HOST are added for all)."""


def json_flag(what: str) -> Callable[[argparse.ArgumentParser], None]:
    """An arguments-adder for ``--json`` alone: print ``what`` as JSON."""

    def add(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--json", action="store_true", help=f"print {what} as JSON")

    return add


@dataclass(frozen=True)
class Lazy:
    """A stand-in for the function ``name`` of ``module`` that imports it on its first
    call, so a table row can name a command's functions without importing its module."""

    module: str
    name: str

    def resolve(self) -> Callable[..., Any]:
        """The function itself (imported now)."""
        return cast(Callable[..., Any], getattr(importlib.import_module(self.module), self.name))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)


def lazy(module: str, *names: str) -> tuple[Lazy, ...]:
    """``Lazy`` stand-ins for ``module``'s functions ``names``."""
    return tuple(Lazy(module, name) for name in names)


@dataclass(frozen=True)
class Command:
    """One sub-command: a row of the table in table.py."""

    name: str  # "status", or "queue show" for an action of the `queue` group
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: PlainRunner | HostRunner
    host: HostArg = "none"  # a HOST positional: none, required, optional, or unless --all
    connects: bool = False  # True: ``run`` is a HostRunner (see the module docstring)
    # What Ctrl-C means: 130 unless the command says otherwise (logs: how --follow ends).
    interrupted: Callable[[Call], int] = exit_interrupted
    description: str | None = None  # the sub-command's --help text, when more than ``help``
    fleet: bool = True  # False: it makes its own fleet (demo): no --hosts of its own


# The commands that go on with the sound entries of a fleet file whose mistakes all lie in
# other [[hosts]] / [[groups]] entries: they only read, stop or pull, so a typo in one
# entry never blocks an emergency stop of another host (hour s22b #10). Launch, move,
# sync, teardown and the rest, which act on what the whole file says, wait for the fix.
# `watch` goes on too (hour s31 CLI #3): refusing at start left the whole fleet unwatched
# (a systemd unit restarting into the same refusal) over one entry's typo; it watches the
# sound entries and takes the whole file once it is fixed, as it takes any edit.
DESPITE_MISTAKES = frozenset({
    "status", "queue show", "queue stop", "queue kill", "logs", "diagnose", "pull", "verify",
    "watch",
})  # fmt: skip


def run_command(command: Command, args: argparse.Namespace) -> int:
    """Run ``command`` with parsed ``args``; every expected failure becomes its exit code
    and one message on stderr, with the fix when one is known."""
    call = Call(args, command.name)
    try:
        if command.name in DESPITE_MISTAKES:
            _despite_mistakes(call)
        name = getattr(args, "host", None) if command.host != "none" else None
        if name is not None:
            call.host_config = find_host(call.fleet, name)
        if command.connects:
            run = cast(HostRunner, command.run)
            return call.on_host(lambda transport: run(call, transport))
        return cast(PlainRunner, command.run)(call)
    except ConfigError as exc:
        if exc.partial is not None and command.name not in DESPITE_MISTAKES:
            named = getattr(args, "host", None) if command.host != "none" else None
            sound = isinstance(named, str) and named in {h.name for h in exc.partial.fleet.hosts}
            # The host asked for is sound, the mistake another entry's: said first, or a
            # refusal of box2 read as box1's error alone (h491 #12).
            why = (
                f"{named}: refused — its own entry is sound, but {command.name} acts on what "
                f"the whole fleet file says, which has a mistake: "
                if sound
                else ""
            )
            return call.fail(
                why + str(exc),
                fix="correct the file; meanwhile "
                + ", ".join(sorted(DESPITE_MISTAKES))
                + " still run on a host whose own entry is sound",
                code=EXIT_BAD_INPUT,
            )
        return call.fail(str(exc), code=EXIT_BAD_INPUT)
    except UnknownHost as exc:
        return call.fail(exc.message, fix=exc.fix, code=EXIT_BAD_INPUT)
    except HostKeyError as exc:  # before TransportError: it is one, but not "unreachable"
        _json_unreachable(args, exc)
        return call.fail(f"{exc.host}: {exc.message}", fix=exc.fix)
    except TransportError as exc:
        if (
            call.host_config is not None
            and isinstance(exc, NoAnswer)
            and exc.host == call.host_config.name  # not another host the command reached
        ):
            # A box torn down, stopped by watch or preempted: said first, as queue show,
            # pull and status do (h462 #3: logs, disk, shell… said only "check the port").
            from rgt_tui.services.runtime.preemption import with_unreachable_fix

            exc = with_unreachable_fix(call.fleet, call.host_config, exc)
        _json_unreachable(args, exc)
        return call.fail(f"{exc.host} unreachable: {exc.message}", fix=exc.fix)
    except KeyboardInterrupt:
        return command.interrupted(call)


def _despite_mistakes(call: Call) -> None:
    """Read the fleet; when its mistakes all lie in some entries, go on with the others,
    saying on stderr which are left out and why — unless the host named is one of them
    (then the mistakes are the answer, as for every other command)."""
    try:
        call.fleet  # noqa: B018 - read now, so the mistakes are met here
    except ConfigError as exc:
        host = getattr(call.args, "host", None)
        left: dict[str, list[int]] = {}  # a name two entries use: both its lines
        for name, line in exc.partial.left_out if exc.partial is not None else ():
            left.setdefault(name, []).extend([line] if line else [])
        if exc.partial is None or host in left:
            raise
        group_of = dict(exc.partial.ranks)
        # An entry with no name is named by its line already ("the [[hosts]] entry at
        # line 13"): not "… at line 13 (line 13)" (h581 #9).
        named = ", ".join(
            name + ("" if " entry at line " in name else _lines_words(lines, group_of.get(name)))
            for name, lines in left.items()
        )
        call.err.print(
            Text.assemble(
                (f"rgt-tui {call.name}: ", "bold yellow"),
                f"going on without {named}: ",
                str(exc),
            )
        )
        # Said as it is: the commands of DESPITE_MISTAKES all go on (hour s31 CLI #9).
        going_on = ", ".join(sorted(DESPITE_MISTAKES))
        call.err.print(
            Text.assemble(("  fix: ", "bold"), f"correct the file; until then {going_on} go on "
            "without what it leaves out, and every other command refuses it")
        )  # fmt: skip
        call.left_out = {
            name: _lines_words(lines, group_of.get(name)) for name, lines in left.items()
        }
        call.use_fleet(exc.partial.fleet)


def _lines_words(lines: list[int], group: str | None = None) -> str:
    """`` (line 11)``, `` (lines 3 and 11)``, or nothing when no line is known; with
    ``group``, `` (line 5, a rank of pair)``: a sound entry left out with its group."""
    rank = f", a rank of {group}" if group else ""
    if not lines:
        return f" (a rank of {group})" if group else ""
    if len(lines) == 1:
        return f" (line {lines[0]}{rank})"
    return f" (lines {', '.join(map(str, lines[:-1]))} and {lines[-1]}{rank})"


def _json_unreachable(args: argparse.Namespace, exc: TransportError) -> None:
    """With ``--json``, the host that did not answer is a JSON object on stdout too
    (``{"host", "reachable": false, "error", "fix"}``, as ``status --json`` words it):
    ``… --json | jq`` reads an answer, not nothing. The message stays on stderr."""
    if getattr(args, "json", False):
        print(
            json.dumps(
                {"host": exc.host, "reachable": False, "error": exc.message, "fix": exc.fix},
                indent=2,
            )
        )
