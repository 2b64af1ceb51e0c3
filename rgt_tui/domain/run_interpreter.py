"""Which interpreter a host's runs use, read off its ``run`` template (pure).

Preflight asks the box's Python about torch and the GPUs *in the environment the cells
run in*, not in whatever ``python3`` the login shell finds: a template such as
``cd ~/proj && . .venv/bin/activate && python train.py {cfg}`` runs a venv's Python, and
a check made anywhere else says nothing about the run (U28, U31). So the part of the
template before its first ``{field}`` is kept up to and including its interpreter word,
and preflight runs that with ``-`` (the program on stdin).

A group rank's template starts by sourcing its environment file
(``group_run.ENV_PREFIX``), which a launch writes just before it starts the ranks: the
interpreter is read from what follows, so a group's preflight before its first launch
does not source a file that is not there yet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rgt_tui.domain.group_run import ENV_PREFIX

DEFAULT_PYTHON = "python3"
# python, python3, python3.11, /opt/conda/bin/python, .venv/bin/python3 (quoted or not).
_PYTHON_WORD = re.compile(r"""^["']?(?:[^\s"']*/)?python(?:\d+(?:\.\d+)*)?["']?$""")
_FIELD = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_WORD = re.compile(r"\S+")
# Where one shell command ends and the next begins: the environment set up before them
# (cd, activate, exports) is kept even when the template's command is not python.
_SEPARATOR = re.compile(r"&&|;|\|\|")


@dataclass(frozen=True)
class RunInterpreter:
    """The shell text that starts the run's Python (``command + " -"`` runs a program
    given on stdin) and where it came from, for the preflight report."""

    command: str
    source: str  # "python key", "run template", "run template's environment", "default"

    def describe(self) -> str:
        """``python3 (the default: no python key, no interpreter in the run template)``."""
        why = {
            "python key": "the host's python key",
            "run template": "the run template",
            "run template's environment": "the run template's set-up, with python3",
            "default": "the default: no python key, no interpreter in the run template",
        }[self.source]
        return f"{self.command} ({why})"


def run_interpreter(run: str | None, python: str | None = None) -> RunInterpreter:
    """The interpreter of a host's runs: ``python`` (the host's ``python`` key) when set;
    else the ``run`` template up to and including its first interpreter word before the
    first ``{field}`` (``uv run python``, ``conda run -n X python`` and a set-up such as
    ``cd ~/p && . .venv/bin/activate && python`` are kept whole); else the template's
    set-up commands (before its last ``&&``/``;``) followed by ``python3``; else
    ``python3``."""
    if python and python.strip():
        return RunInterpreter(python.strip(), "python key")
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
    if separators:
        setup = head[: separators[-1].end()].strip()
        return RunInterpreter(f"{setup} {DEFAULT_PYTHON}", "run template's environment")
    return RunInterpreter(DEFAULT_PYTHON, "default")
