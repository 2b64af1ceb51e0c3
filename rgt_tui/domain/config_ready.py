"""The readiness keys of ``[fleet]`` and ``[[hosts]]`` (issue 29): ``code``,
``code_exclude``, ``credentials``, ``tracker``, ``tracker_patterns``, ``python``,
``checkpoint_gb``, ``keep_checkpoints``, ``preflight_ack``; issue 42's ``smoke``,
``smoke_seconds`` (GEN5/U10), ``china_mirrors``, ``pip_index_url``, ``hf_endpoint`` and
``github_url`` (generic-ssh §3).

``[fleet]`` gives every host's default; a host's own key wins, except ``credentials``,
which merge by variable name (a host's entry replaces the fleet's of the same name).
A credential is written ``NAME = { env = "VAR" }``, ``{ netrc = "api.wandb.ai" }`` or
``{ file = "~/.config/token" }``: only where the value is, never the value itself, so a
fleet file can be shared and nothing secret is ever parsed, printed or journalled.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from rgt_tui.domain.config import (
    CREDENTIAL_SOURCES,
    PREFLIGHT_CHECKS,
    TRACKER_PATTERNS,
    Credential,
    Readiness,
)
from rgt_tui.domain.config_toml import Table
from rgt_tui.domain.literal_secret import looks_like_a_key

ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Variables the cell runner, its shell or the job itself lives by: a credential exported
# under one of these names breaks every cell (a user's hour: PATH = { env = "X" } gave
# "exec: bash: not found") or changes what runs, so none can be a credential's name.
RESERVED_ENV = frozenset(
    {"PATH", "HOME", "SHELL", "USER", "LOGNAME", "PWD", "IFS", "ENV", "BASH_ENV", "TERM",
     "TMPDIR", "LANG", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "PYTHONPATH", "PYTHONHOME",
     "VIRTUAL_ENV", "CONDA_PREFIX", "MASTER_ADDR", "MASTER_PORT", "RANK", "LOCAL_RANK",
     "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "UID", "EUID", "PPID", "SHELLOPTS",
     "BASHOPTS", "CDPATH", "CUDA_DEVICE_ORDER", "GLIBC_TUNABLES"}
)  # fmt: skip
RESERVED_PREFIXES = ("LD_", "BASH_FUNC_", "RGT_", "LC_", "SLURM_", "TORCHELASTIC_", "NCCL_")


def readiness(t: Table, base: Path, inherited: Readiness | None = None) -> Readiness:
    """The readiness keys of table ``t`` over ``inherited`` (the fleet's, for a host);
    mistakes are recorded in ``t.problems`` and the inherited value kept."""
    d = inherited or Readiness()
    c = t.checked
    code = c(lambda: t.maybe("code", example="~/projects/detector"), None)
    tracker = c(lambda: _tracker(t), None)
    patterns = c(lambda: _patterns(t), None)
    gb = c(lambda: t.number("checkpoint_gb", None), None)
    keep = c(lambda: t.integer("keep_checkpoints", d.keep_checkpoints), d.keep_checkpoints)
    credentials = {cred.name: cred for cred in d.credentials}
    for cred in c(lambda: _credentials(t, base), ()):
        credentials[cred.name] = cred
    return replace(
        d,
        code=_local(base, code) if code is not None else d.code,
        code_exclude=c(
            lambda: _opt_list(t, "code_exclude", '["data/", "*.ckpt"]', "gitignore-style patterns"),
            None,
        )
        or d.code_exclude,
        credentials=tuple(credentials.values()),
        tracker=tracker if tracker is not None else d.tracker,
        tracker_patterns=(
            patterns
            if patterns is not None
            else (TRACKER_PATTERNS.get(tracker, ()) if tracker is not None else d.tracker_patterns)
        ),
        python=c(lambda: t.maybe("python", example="/opt/conda/bin/python"), None) or d.python,
        checkpoint_gb=gb if gb is not None else d.checkpoint_gb,
        keep_checkpoints=keep,
        preflight_ack=c(lambda: _acks(t), None) or d.preflight_ack,
        smoke=c(lambda: t.maybe("smoke", example="python train.py --steps 20"), None) or d.smoke,
        smoke_seconds=c(lambda: t.number("smoke_seconds", None), None) or d.smoke_seconds,
        china_mirrors=_flag(t, "china_mirrors", d.china_mirrors),
        pip_index_url=c(lambda: _url(t, "pip_index_url"), None) or d.pip_index_url,
        hf_endpoint=c(lambda: _url(t, "hf_endpoint"), None) or d.hf_endpoint,
        github_url=c(lambda: _url(t, "github_url"), None) or d.github_url,
    )


def _flag(t: Table, key: str, inherited: bool | None) -> bool | None:
    """A true/false key, or ``inherited`` when absent (a mistake is recorded)."""
    if key not in t.data:
        return inherited
    value = t.data[key]
    if not isinstance(value, bool):
        t.problems.append(t.error(key, f"expected true or false, got {value!r}"))
        return inherited
    return value


def _url(t: Table, key: str) -> str | None:
    """An http(s) address (a mirror), trailing slash dropped; None when absent."""
    value = t.maybe(key, example="https://hf-mirror.com")
    if value is None:
        return None
    if not re.fullmatch(r"https?://[^\s'\"\\]+", value):
        raise t.error(
            key, f"expected an http(s) address such as https://hf-mirror.com, got {value!r}"
        )
    return value.rstrip("/")


def _acks(t: Table) -> tuple[str, ...] | None:
    """``preflight_ack``: names of preflight checks, each one of PREFLIGHT_CHECKS."""
    names = _opt_list(t, "preflight_ack", '["gpu", "driver"]', "check names")
    for name in names or ():
        if name not in PREFLIGHT_CHECKS:
            raise t.error(
                "preflight_ack",
                f"unknown preflight check {name!r} — expected some of: {', '.join(PREFLIGHT_CHECKS)}",
            )
    return names


def _local(base: Path, text: str) -> Path:
    path = Path(text).expanduser()
    return path if path.is_absolute() else base / path


def _tracker(t: Table) -> str | None:
    """``tracker``: one of TRACKER_PATTERNS' names, or "none" (no check); None when absent."""
    value = t.maybe("tracker", example="wandb")
    if value is None:
        return None
    if value == "none":
        return ""
    if value not in TRACKER_PATTERNS:
        known = ", ".join([*TRACKER_PATTERNS, "none"])
        raise t.error("tracker", f"unknown tracker {value!r} — expected one of: {known}")
    return value


def _patterns(t: Table) -> tuple[str, ...] | None:
    """``tracker_patterns``: regular expressions, each compiled here so a typo is a
    config mistake with its line, not a crash on the first log line."""
    patterns = _opt_list(t, "tracker_patterns", '["wandb: View run"]', "regular expressions")
    if patterns is None:
        return None
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise t.error(
                "tracker_patterns", f"{pattern!r} is not a regular expression: {exc}"
            ) from None
    return patterns


def _opt_list(t: Table, key: str, example: str, what: str) -> tuple[str, ...] | None:
    """A list of non-empty strings, or None when absent. A mistake is shown with an
    ``example`` of this key's own kind (``what``): a folder like "/workspace" taught the
    wrong thing for exclude patterns or check names."""
    if key not in t.data:
        return None
    return t.text_list(key, [], example=example, what=what)


def _credentials(t: Table, base: Path) -> tuple[Credential, ...]:
    """``[*.credentials]``: NAME = { env | netrc | file = "…" } each. Every mistake is
    recorded at its own line (a user's hour met them one per run, at the header's)."""
    table = t.table("credentials")
    section = f"{t.section}.credentials" if t.section else "credentials"
    c = t.sub(section, table, t.line("credentials"))
    found: list[Credential] = []
    for name, spec in table.items():
        cred = c.checked(lambda name=name, spec=spec: _credential(c, base, name, spec), None)
        if cred is not None:
            found.append(cred)
    return tuple(found)


def _kind(value: object) -> str:
    """What a value is, never the value: "a number", "a list", "empty text"."""
    if isinstance(value, str):
        return "empty text"
    kinds = {
        bool: "true/false",
        int: "a number",
        float: "a number",
        list: "a list",
        dict: "a table",
    }
    return kinds.get(type(value), "another kind of value")


def _credential(c: Table, base: Path, name: str, spec: object) -> Credential:
    """One ``NAME = { source = "ref" }`` of the credentials table ``c``; ConfigError at
    its line when it is not one."""
    example = f'{name} = {{ env = "{name}" }}'
    if not ENV_NAME_RE.fullmatch(name):
        raise c.error(
            name,
            f"{name!r} is not an environment variable name (letters, digits, '_'; "
            "not starting with a digit): each credential is exported to the cells under its name",
        )
    if name in RESERVED_ENV or name.startswith(RESERVED_PREFIXES):  # names are case-sensitive
        raise c.error(
            name,
            f"{name} is a variable the cells' shell or runner lives by, not a secret's "
            "name: name the credential as the tool reads it (e.g. WANDB_API_KEY, HF_TOKEN)",
        )
    # The key names the credential in the message (file:line: NAME: …): not again here.
    if isinstance(spec, dict) and len(spec) > 1:
        raise c.error(
            name, f"one source, not {len(spec)} ({', '.join(map(str, spec))}), e.g. {example}"
        )
    if not isinstance(spec, dict) or len(spec) != 1:
        raise c.error(
            name,
            f'expected one source, e.g. {example}, {{ netrc = "api.wandb.ai" }} '
            'or { file = "~/.config/token" } — never the secret itself',
        )
    ((source, ref),) = spec.items()
    if source not in CREDENTIAL_SOURCES:
        raise c.error(
            name,
            f"unknown source {source!r} — expected one of "
            f"{', '.join(CREDENTIAL_SOURCES)}, e.g. {example}",
        )
    if not isinstance(ref, str) or not ref.strip():
        # Its type only: a mis-shaped value may be the secret itself (a review).
        raise c.error(name, f"{source} must be a non-empty text, not {_kind(ref)}, e.g. {example}")
    if source == "env" and not ENV_NAME_RE.fullmatch(ref):
        # Not a variable's name (an "sk-…" key pasted there): said without it.
        raise c.error(
            name,
            "env must name an environment variable (letters, digits and _, not starting "
            f"with a digit), e.g. {example} — never the secret itself",
        )
    if looks_like_a_key(token := Path(ref).name if source == "file" else ref):
        # Pasted where its source's name goes: said without it, as every message that
        # names the source (preflight's, launch's, the TUI plan's) would repeat it.
        raise c.error(
            name,
            f"the {source} given is a token itself ({token[:3]}…), not where one is: name "
            f"its source, e.g. {example} — never the secret itself",
        )
    if source == "file":
        ref = str(_local(base, ref))
    return Credential(name, source, ref, c.line(name))
