"""Load pulled files in a separate process with memory and time limits (verify's loader).

``VerifyLoader`` runs ``rgt_tui/worker/verify_worker.py`` under an interpreter of the
user's choice (``[fleet] verify_python``, by default this one) and asks it to load one file
at a time: torch checkpoints, JSON and JSON lines. Parsing a file costs memory that grows
with what the file says, so a huge or hostile file may exhaust, hang or crash the worker —
that file is then named (over the memory limit, timed out, killed) and the next one gets a
fresh worker; verify and the TUI go on. One worker serves the whole run: starting Python
and importing torch per file would cost about a second each.

Blocking (it waits on a pipe); the verify service calls it through ``asyncio.to_thread``.
Thread-safe: files are loaded one at a time, in the order the calls arrive.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from rgt_tui.domain.artifacts import CORRUPT, NOT_VERIFIED, UNSAFE, VERIFIED
from rgt_tui.domain.config_parse import CODE_MODULES
from rgt_tui.domain.units import fmt_bytes

WORKER = Path(__file__).resolve().parents[2] / "worker" / "verify_worker.py"
GIB = 1 << 30
MIB = 1 << 20


@dataclass(frozen=True)
class LoaderLimits:
    """How much one file may cost the worker; None picks a limit from the file's size.

    The defaults leave room for any sound file: a checkpoint is mapped (its size) and an
    old-format one read once more, JSON takes several times its size as Python objects;
    a gigabyte on top covers the loader itself. A small file claiming gigabytes is stopped.
    """

    memory_bytes: int | None = None  # how far the worker's address space may grow per file
    timeout_s: float | None = None  # per file
    start_timeout_s: float = 120.0  # starting the interpreter; importing torch

    def memory_for(self, kind: str, size: int) -> int:
        """The memory limit for one file of ``kind`` and ``size`` bytes."""
        if self.memory_bytes is not None:
            return self.memory_bytes
        return GIB + (2 * size if kind == "torch" else 16 * size)

    def timeout_for(self, size: int) -> float:
        """The time limit for one file of ``size`` bytes (disk speed, pure-Python unpickling)."""
        if self.timeout_s is not None:
            return self.timeout_s
        return 120.0 + size / (8 * MIB)


# How a ``verify_safe_globals`` name that cannot be imported begins its problem: torch is
# there and loads; the report's "loaded with" line names it, the problem its own line.
GLOBALS_PROBLEM = "not verified: [fleet] verify_safe_globals:"
RESAVE = (
    "loading the file would call it, code run here: re-save it on the box as tensors and "
    "plain values (a state_dict)"
)


@dataclass(frozen=True)
class LoaderInfo:
    """Which interpreter and torch verify loaded files with (for the report and record)."""

    python: str  # as configured (verify_python) or this interpreter
    python_version: str | None  # None: it never started
    torch: str | None  # torch.__version__; None: not asked (no checkpoint) or none there
    torch_file: str | None
    torch_problem: str | None  # why checkpoints were not loaded: no torch, too old, no start
    memory_limited: bool  # False where the system cannot cap a process's address space
    starts: int  # workers started; more than one: one was stopped and replaced


class _WorkerGone(Exception):
    """The worker exited or was killed before it answered."""


class VerifyLoader:
    """A worker process for one verify run (see the module docstring); call ``close``."""

    def __init__(
        self,
        python: str | None = None,
        limits: LoaderLimits | None = None,
        safe_globals: tuple[str, ...] = (),
    ) -> None:
        self.python = python or sys.executable
        self.safe_globals = safe_globals  # [fleet] verify_safe_globals
        self.configured = python is not None
        self.limits = limits or LoaderLimits()
        self.starts = 0
        self._lock = threading.Lock()
        self._closed = False
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._buffer = b""
        self._next_id = 0
        self._hello: dict[str, Any] | None = None
        self._start_problem: str | None = None
        self._torch: dict[str, Any] | None = None  # the first worker's answer to "torch"
        self._torch_imported = False  # in the current worker

    # -- the API -----------------------------------------------------------------------

    def check(self, kind: str, path: Path, size: int) -> tuple[str, str]:
        """``(status, detail)`` for one file: ``kind`` is torch, json or jsonl."""
        with self._lock:
            if self._closed:
                return NOT_VERIFIED, "not verified: verify was stopped"
            problem = self._ready_for(kind)
            if problem:
                return NOT_VERIFIED, problem
            memory = self.limits.memory_for(kind, size)
            timeout = self.limits.timeout_for(size)
            request = {"op": "load", "kind": kind, "path": str(path), "memory": memory}
            try:
                reply = self._ask(request, timeout)
            except _WorkerGone as exc:
                if self._closed:
                    return NOT_VERIFIED, "not verified: verify was stopped"
                return NOT_VERIFIED, f"not verified: while loading it, {exc}"
            if reply is None:
                self._stop()
                return NOT_VERIFIED, (
                    f"not verified: timed out after {timeout:g} s loading it; the loader "
                    "was stopped (an enormous or hostile file?)"
                )
            status = self._status(reply, memory)
            if reply.get("outcome") == "memory" and self._damaged_by_size(kind, size):
                # Random bytes read as a legacy pickle ask for gigabytes (a BINBYTES
                # length): "needed more than 1.0G" sent the user to raise a limit for a
                # file that is damaged (a CI run's random .pt, now and then).
                return CORRUPT, (
                    f"asked for more than {fmt_bytes(memory)} while loading a "
                    f"{fmt_bytes(size)} file, which no checkpoint that size needs: "
                    f"{_shorten(str(reply.get('detail') or 'MemoryError'))}"
                )
            return status

    def _damaged_by_size(self, kind: str, size: int) -> bool:
        """Whether a torch file that hit the default memory limit is damaged: the limit is
        1 GiB more than twice its size (``memory_for``), and a real checkpoint under 64
        MiB needs nowhere near that (tensors are mapped, or read once; pickled Python
        objects grow some ten times). A limit the user set says nothing of the file."""
        return kind == "torch" and self.limits.memory_bytes is None and size * 16 < GIB

    @property
    def pid(self) -> int | None:
        """The running worker's process id, or None."""
        proc = self._proc
        return None if proc is None else proc.pid

    @property
    def info(self) -> LoaderInfo | None:
        """What was used; None when no file needed loading."""
        if self.starts == 0 and self._start_problem is None:
            return None
        hello, torch = self._hello or {}, self._torch or {}
        torch_problem = self._start_problem or self._torch_problem()
        return LoaderInfo(
            python=self.python,
            python_version=hello.get("python_version"),
            torch=torch.get("torch"),
            torch_file=torch.get("file"),
            torch_problem=torch_problem,
            memory_limited=bool(hello.get("memory_limit")),
            starts=self.starts,
        )

    def close(self) -> None:
        """Stop the worker. Safe from any thread, also while a file is loading."""
        self._closed = True
        proc = self._proc
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.kill()  # a load in flight then sees the pipe close and returns
        with self._lock:
            self._stop()

    def __enter__(self) -> VerifyLoader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the worker ----------------------------------------------------------------------

    def _ready_for(self, kind: str) -> str | None:
        """Start the worker (and torch in it, for a checkpoint); a problem, or None."""
        if self._start_problem:
            return self._start_problem
        if self._proc is None or self._proc.poll() is not None:
            self._stop()
            problem = self._start()
            if problem:
                return problem
        if kind != "torch":
            return None
        if self._torch is not None and self._torch_problem():
            return self._torch_problem()
        if not self._torch_imported:
            try:
                request = {"op": "torch", "safe_globals": list(self.safe_globals)}
                reply = self._ask(request, self.limits.start_timeout_s)
            except _WorkerGone as exc:
                return f"not verified: while importing torch, {exc}"
            if reply is None:
                self._stop()
                return (
                    f"not verified: importing torch in {self.python} took over "
                    f"{self.limits.start_timeout_s:g} s"
                )
            if self._torch is None:
                self._torch = reply
            self._torch_imported = True
        return self._torch_problem()

    def _torch_problem(self) -> str | None:
        if self._torch is None:
            return None
        if self._torch.get("torch") is None:
            why = self._torch.get("problem") or "torch cannot be imported"
            return f"not verified: no torch in {self.python} ({why}); fix: {self._fix()}"
        if self._torch.get("problem"):
            return f"not verified: {self._torch['problem']} ({self.python}); fix: {self._fix()}"
        problem = self._torch.get("globals_problem")
        if problem:
            what = "remove it from" if "never allowed" in problem else "correct the name in"
            return f"{GLOBALS_PROBLEM} {problem} in {self.python}; fix: {what} the fleet file"
        return None

    def _fix(self) -> str:
        if self.configured:
            return (
                "point [fleet] verify_python at an interpreter with torch>=2.6, "
                f"or pip install 'torch>=2.6' into {self.python}"
            )
        return (
            "set [fleet] verify_python to an environment with torch>=2.6 (your training "
            "environment's python), or pip install 'rgt-tui[torch]'"
        )

    def _start(self) -> str | None:
        """Start a worker and read its hello; a problem (kept for the run), or None."""
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by _stop
        env = dict(os.environ)
        # Loading needs no thread pool; fewer threads, less address space to account for.
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
        try:
            self._proc = subprocess.Popen(
                [self.python, str(WORKER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                env=env,
                close_fds=True,
            )
        except OSError as exc:
            self._start_problem = (
                f"not verified: cannot run {self.python}: {exc.strerror or exc}; "
                "fix: set [fleet] verify_python to a Python interpreter (3.9 or newer)"
            )
            return self._start_problem
        self.starts += 1
        self._buffer = b""
        self._torch_imported = False
        try:
            hello = self._read(time.monotonic() + self.limits.start_timeout_s)
        except _WorkerGone as exc:
            hello = None
            why = str(exc)
        else:
            why = f"no answer in {self.limits.start_timeout_s:g} s"
        if not hello or hello.get("hello") != 1:
            self._stop()
            self._start_problem = (
                f"not verified: the loader did not start under {self.python} ({why}); "
                "fix: set [fleet] verify_python to a Python interpreter (3.9 or newer)"
            )
            return self._start_problem
        self._hello = hello
        return None

    def _ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """Send one request, wait for its reply; None when it took longer than ``timeout``."""
        assert self._proc is not None and self._proc.stdin is not None
        self._next_id += 1
        request = {**request, "id": self._next_id}
        try:
            self._proc.stdin.write(json.dumps(request).encode() + b"\n")
            self._proc.stdin.flush()
        except OSError:
            raise _WorkerGone(self._death()) from None
        reply = self._read(time.monotonic() + timeout)
        if reply is not None and reply.get("id") != self._next_id:
            self._stop()
            raise _WorkerGone(f"the loader answered out of turn: {reply!r:.200}")
        return reply

    def _read(self, deadline: float) -> dict[str, Any] | None:
        """The next reply line; None at the deadline; _WorkerGone when the worker ended."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise _WorkerGone(self._death())
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            reply = json.loads(line)
        except ValueError:
            self._stop()
            raise _WorkerGone(f"the loader sent a line that is not JSON: {line[:200]!r}") from None
        return reply if isinstance(reply, dict) else {}

    def _death(self) -> str:
        """Why the worker ended (it did: its output closed), then forget it."""
        proc = self._proc
        code = None
        if proc is not None:
            try:
                code = proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
        tail = self._stderr_tail()
        self._stop()
        if code is not None and code < 0:
            name = _signal_name(-code)
            if -code == signal.SIGKILL:
                return f"the loader was killed ({name}; out of memory?)"
            return f"the loader crashed ({name})"
        return f"the loader exited ({code}){': ' + tail if tail else ''}"

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - 2000))
            lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
            return lines[-1] if lines else ""
        return ""

    def _stop(self) -> None:
        """Kill the worker, if any, and release its pipes; the next file starts another."""
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            for pipe in (proc.stdin, proc.stdout):
                with contextlib.suppress(OSError):
                    if pipe is not None:
                        pipe.close()
        if self._stderr is not None:
            with contextlib.suppress(OSError):
                self._stderr.close()
            self._stderr = None
        self._buffer = b""
        self._torch_imported = False

    def _status(self, reply: dict[str, Any], memory: int) -> tuple[str, str]:
        """The worker's outcome in verify's words."""
        outcome, detail = reply.get("outcome"), str(reply.get("detail") or "")
        if outcome == "loaded":
            return VERIFIED, detail
        if outcome == "unsafe":
            named = re.search(r"GLOBAL ([A-Za-z_][\w.]*)", detail)
            name = named.group(1) if named else ""
            module, _, last = name.rpartition(".")
            top = module.split(".")[0]
            from rgt_tui.worker.verify_worker import DATA_CLASSES  # only here: 90 ms

            if top == "__main__":
                # Defined in the training script itself: nothing here can import it, and
                # naming it in the key failed every checkpoint (h595 #3).
                detail += (
                    f" — {name} was defined in the script that saved it, which cannot be "
                    "imported here: re-save its values on the box as a dict (a state_dict)"
                )
            elif module and top not in CODE_MODULES:
                # torch's own advice (add_safe_globals) cannot be typed into rgt-tui: the
                # fleet key can (hour s19a #4). The worker refuses a function and a class
                # that runs code when built (h591 #1, review h594 #1), whatever the key
                # says; what this name is cannot be told here without importing it.
                # "Add": the key is a list, and one pasted as ["X"] dropped the others.
                detail += (
                    f' — if {name} is a class of plain data you trust, allow it: add "{name}" '
                    "to [fleet] verify_safe_globals in the fleet file (a function, or a "
                    "class that runs code when built, is refused)"
                )
                if not last[:1].isupper() and top != "numpy" and name not in DATA_CLASSES:
                    detail += f"; if {name} is a function, {RESAVE}"
            elif name:
                detail += f" — {name} is no data class: {RESAVE}"
            return UNSAFE, detail
        if outcome == "corrupt":
            return CORRUPT, detail
        if outcome == "memory":
            self._stop()  # the worker exits after this answer; the next file gets a new one
            return NOT_VERIFIED, (
                f"not verified: killed: over the memory limit — loading it needed more than "
                f"{fmt_bytes(memory)} ({_shorten(detail)})"
            )
        return NOT_VERIFIED, f"unverifiable: {detail}"


def _shorten(text: str, width: int = 120) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
