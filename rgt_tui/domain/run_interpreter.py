"""Which interpreter a host's runs use, read off its ``run`` template (pure).

Preflight asks the box's Python about torch and the GPUs *in the environment the cells
run in*, not in whatever ``python3`` the login shell finds: a template such as
``cd ~/proj && . .venv/bin/activate && python train.py {cfg}`` runs a venv's Python, and
a check made anywhere else says nothing about the run (U28, U31). So the part of the
template before its first ``{field}`` is kept up to and including its interpreter word,
and preflight runs that with ``-`` (the program on stdin).

A template whose command is a program, not a Python (``cd ~/p && torchrun ... {cfg}``,
``accelerate launch``), runs the Python that program's shebang names when it is a console
script, which need not be the ``python3`` on the same PATH (ux-h #2: torchrun from one
venv, python3 from another). Only the box can say which: preflight's box script resolves
the word after the template's set-up (``rgt_script_python`` in ``preflight.sh``) and runs
the interpreter its shebang names, else ``python3`` as before; ``on_box`` reads what it
found back into the description and the install fixes.

A group rank's template starts by sourcing its environment file
(``group_run.ENV_PREFIX``), which a launch writes just before it starts the ranks: the
interpreter is read from what follows, so a group's preflight before its first launch
does not source a file that is not there yet.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from rgt_tui.domain.group_run import ENV_PREFIX

DEFAULT_PYTHON = "python3"
# preflight.sh's function that runs a console script's shebang interpreter.
SCRIPT_RUNNER = "rgt_script_python"
# python, python3, python3.11, /opt/conda/bin/python, .venv/bin/python3 (quoted or not).
_PYTHON_WORD = re.compile(r"""^["']?(?:[^\s"']*/)?python(?:\d+(?:\.\d+)*)?["']?$""")
_FIELD = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_WORD = re.compile(r"\S+")
# Where one shell command ends and the next begins: the environment set up before them
# (cd, activate, exports) is kept even when the template's command is not python.
_SEPARATOR = re.compile(r"&&|;|\|\|")
# ``VAR=value`` before a command: set for that command, not the command itself.
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# A command word no shebang is read for: a shell runs a script whose Python no one can
# tell; a quoted or globbed word is left to the template (python3 as before).
_NOT_A_SCRIPT = {"bash", "sh", "dash", "zsh", "exec", "eval", "source", ".", "env", "nohup"}


@dataclass(frozen=True)
class RunInterpreter:
    """The shell text that starts the run's Python (``command + " -"`` runs a program
    given on stdin) and where it came from, for the preflight report. For a console
    script (source "console script"): ``script`` is its word in the template, ``setup``
    the template's set-up with ``python3`` (what runs when the script is no Python's),
    and, once the box answered (``on_box``), ``found`` where it is and ``shebang`` the
    interpreter its first line names ("" when it is no Python script)."""

    command: str
    source: str  # "python key", "run template", "run template's environment", "default",
    # "console script"
    # The python key's: the interpreter the run template itself starts, when it names
    # another (the cells run that one; preflight checked the key's: hour s22a #3).
    overridden: str = ""
    script: str = ""
    setup: str = ""
    found: str = ""
    shebang: str = ""

    def describe(self) -> str:
        """``python3 (the default: no python key, no interpreter in the run template)``."""
        if self.source == "console script":
            if self.shebang:
                return (
                    f"the shebang of {self.found or self.script} (#!{self.shebang}), the "
                    f"run template's {self.script}"
                )
            where = f": {self.found}" if self.found and self.found != self.script else ""
            setup = "the run template's set-up, with python3: " if self.setup != "python3" else ""
            return f"{self.setup} ({setup}its {self.script} is no Python script{where})"
        why = {
            "python key": "the host's python key",
            "run template": "the run template",
            "run template's environment": "the run template's set-up, with python3",
            "default": "the default: no python key, no interpreter in the run template",
        }[self.source]
        return f"{self.command} ({why})"

    @property
    def shown(self) -> str:
        """The interpreter as the user wrote it: a console script's template head
        (``cd ~/p && torchrun``), not preflight's runner."""
        if self.source == "console script" and not self.found:
            return self.command.replace(f"{SCRIPT_RUNNER} ", "", 1)
        return self.command

    def on_box(self, script: Mapping[str, Any] | None, executable: str) -> RunInterpreter:
        """This interpreter as the box resolved it (``BoxFacts.script``; ``executable``:
        the Python that answered): a console script's Python by its path, for the fixes
        (``… -m pip install torch``), or the set-up's python3 when it is no Python
        script. Unchanged for any other source, or when the box did not say."""
        if self.source != "console script" or not script or not script.get("ran"):
            return self
        found = str(script.get("path", ""))
        shebang = str(script.get("shebang", ""))
        if not shebang:
            return replace(self, command=self.setup, found=found)
        command = shlex.quote(executable) if executable else self.command
        return replace(self, command=command, found=found, shebang=shebang)


def run_interpreter(run: str | None, python: str | None = None) -> RunInterpreter:
    """The interpreter of a host's runs: ``python`` (the host's ``python`` key) when set;
    else the ``run`` template up to and including its first interpreter word before the
    first ``{field}`` (``uv run python``, ``conda run -n X python`` and a set-up such as
    ``cd ~/p && . .venv/bin/activate && python`` are kept whole); else, when the
    template's command (after its set-up and ``VAR=value`` words) is a program such as
    ``torchrun``, the Python its shebang names, found on the box (``console script``);
    else the template's set-up commands (before its last ``&&``/``;``) followed by
    ``python3``; else ``python3``."""
    if python and python.strip():
        key = python.strip()
        # A template that starts its Python by one word (``python3 train.py``, also after
        # ``cd``, ``exec`` or ``VAR=value`` words, which change no PATH) runs that one;
        # after a set-up that may (``. .venv/bin/activate && python``) which Python that
        # is cannot be read here, and the key may well name it.
        found = run_interpreter(run)
        own = _plain_python(found.command) if found.source == "run template" else ""
        differs = bool(own) and own != key
        return RunInterpreter(key, "python key", overridden=own if differs else "")
    if run and run.startswith(ENV_PREFIX):
        run = run[len(ENV_PREFIX) :]
    if not run:
        return RunInterpreter(DEFAULT_PYTHON, "default")
    field = _FIELD.search(run)
    head = run[: field.start()] if field else run
    for word in _WORD.finditer(head):
        if _PYTHON_WORD.match(word.group()):
            return RunInterpreter(head[: word.end()].strip(), "run template")
    separators = list(_SEPARATOR.finditer(head))
    start = separators[-1].end() if separators else 0
    setup = head[:start].strip()
    fallback = f"{setup} {DEFAULT_PYTHON}" if setup else DEFAULT_PYTHON
    # The command word: a whole word before the first field (not cut by it).
    words = [w for w in _WORD.finditer(head, start) if not _ASSIGNMENT.match(w.group())]
    command = words[0] if words else None
    if command is not None and (command.end() < len(head) or not field):
        word = command.group()
        if word not in _NOT_A_SCRIPT and not any(c in word for c in "'\"\\`(){}<>|&;*?"):
            runs = f"{head[: command.start()]}{SCRIPT_RUNNER} {word}"
            return RunInterpreter(runs, "console script", script=word, setup=fallback)
    if setup:
        return RunInterpreter(fallback, "run template's environment")
    return RunInterpreter(DEFAULT_PYTHON, "default")


# Words before a python word that leave which Python runs as it was: no PATH, no venv.
_ENV_VARS = ("PATH=", "PYTHONHOME=", "VIRTUAL_ENV=", "CONDA_", "PYENV_")


def _plain_python(head: str) -> str:
    """The python word of a template's head when nothing before it can change which
    Python runs (only ``cd`` commands, ``exec``, ``VAR=value`` of other variables);
    "" otherwise (hour s22c #1: ``cd /tmp && python3``, ``OMP_NUM_THREADS=4 python3``)."""
    parts = _SEPARATOR.split(head)
    if any(p.split()[:1] != ["cd"] for p in parts[:-1]):
        return ""
    words = [
        w
        for w in parts[-1].split()
        if w != "exec" and not (_ASSIGNMENT.match(w) and not w.startswith(_ENV_VARS))
    ]
    # A PATH-like assignment is kept above, so it makes two words: not plain.
    if len(words) != 1 or not _PYTHON_WORD.match(words[0]):
        return ""
    word = words[0].strip("'\"")
    if len(parts) > 1 and "/" in word and not word.startswith(("/", "~")):
        return ""  # relative to where a cd went: the key may well be that file
    return word
