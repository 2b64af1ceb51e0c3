"""A secret written into a command of the fleet file (``teardown``, ``run``).

A provider's destroy command with ``--api-key 9f8e…`` is on that command's command line
while it runs (``ps``, the shell's history of whoever reads the file) and was shown in
the teardown checklist; a run template with ``WANDB_API_KEY=…`` is written into the
box's queue scripts and logs. ``[fleet.credentials]`` refuses a secret itself; these
commands took one silently (h462 #4). A value taken from the environment (``"$KEY"``)
is the user's way out and passes. Pure.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

# A flag that takes a secret: --api-key, --apikey, --token, --password, --secret, …
_FLAG = re.compile(
    r"--?(?:api[-_]?key|api[-_]?token|access[-_]?key|secret[-_]?key|auth[-_]?token|"
    r"access[-_]?token|token|password|passwd)"
    r"(?:=(?P<value>.*))?",
    re.IGNORECASE,
)
# An assignment of one: WANDB_API_KEY=…, HF_TOKEN=…, AWS_SECRET_ACCESS_KEY=…
_ASSIGN = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)", re.DOTALL)
# An environment variable's name (upper case) ending in one: not ``tokenizer=…`` nor
# ``DATASET_KEY=…`` (a review: hydra overrides and data names read as secrets).
_SECRET_NAME = re.compile(
    r"(?:[A-Z0-9]+_)*(?:API_KEY|APIKEY|TOKEN|SECRET|SECRET_KEY|SECRET_ACCESS_KEY|PASSWORD|PASSWD)"
)
# An HTTP header that carries one: curl -H "Authorization: Bearer …", -H "X-API-Key: …"
_HEADER = re.compile(
    r"\s*(?P<name>(?:proxy-)?authorization|x-[a-z0-9-]*(?:key|token)|api-?key)\s*:\s*"
    r"(?:(?:bearer|basic|token)\s+)?(?P<value>\S+)\s*",
    re.IGNORECASE,
)
# A URL's query parameter that carries one: …?api_key=…, &access_token=…
_QUERY = re.compile(
    r"[?&](?P<name>api[-_]?key|apikey|key|token|access[-_]?token|auth|secret|password)"
    r"=(?P<value>[^&#\s]*)",
    re.IGNORECASE,
)
# curl's -u KEY: or -u user:password (Lambda Cloud's API takes the key as the user)
_USER_FLAGS = ("-u", "--user")
# Shorter values are no secret (a flag's "1", a placeholder "x"); a key is longer.
MIN_SECRET = 8


def literal_secret(command: str) -> str | None:
    """``--api-key 9f8e…`` or ``HF_TOKEN=hf_a…``: the first secret written literally in
    ``command``, its value cut to four characters; None when there is none (or the value
    comes from the environment, ``$NAME``). Also a header (``Authorization: Bearer …``),
    a URL's ``?api_key=…``, curl's ``-u KEY:`` and any of these inside a quoted command
    (``sh -c "…"``), which a review found passed (s46 #7). A command shlex cannot split
    is read as whitespace-separated words."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    for i, word in enumerate(words):
        header = _HEADER.fullmatch(word)
        if header is not None:
            if _literal(header.group("value")):
                return f"{header.group('name')}: {_cut(header.group('value'))}"
            continue
        if any(c.isspace() for c in word):  # sh -c "…", bash -lc '…': a command in a word
            inner = literal_secret(word)
            if inner is not None:
                return inner
            continue
        query = _QUERY.search(word)
        if query is not None and _literal(query.group("value")):
            return f"{query.group('name')}={_cut(query.group('value'))}"
        if word in _USER_FLAGS and i + 1 < len(words) and ":" in words[i + 1]:
            user, _, password = words[i + 1].partition(":")
            if _literal(password or user):
                return f"{word} {_cut(password or user)}"
            continue
        flag = _FLAG.fullmatch(word)
        if flag is not None:
            given = flag.group("value")
            value = given if given is not None else (words[i + 1] if i + 1 < len(words) else "")
            name = word.split("=", 1)[0]
            if _literal(value):
                return f"{name} {_cut(value)}"
            continue
        assign = _ASSIGN.fullmatch(word)
        name = assign.group("name") if assign is not None else ""
        if assign is not None and _SECRET_NAME.fullmatch(name) and _literal(assign.group("value")):
            return f"{name}={_cut(assign.group('value'))}"
    return None


def _literal(value: str) -> bool:
    """A value written out: long enough to be a key, not taken from the environment, not
    a number (``MAX_TOKENS=10000000``), a path (``SSH_KEY=~/.ssh/id``: the file, not the
    secret) or a template's field (``{cfg}``)."""
    return (
        len(value) >= MIN_SECRET
        and not value.startswith(("$", "-", "/", "~", "."))
        and "/" not in value  # a relative path: keys/id_ed25519
        and not value.isdigit()
        and "{" not in value
    )


def _cut(value: str) -> str:
    return value[:4] + "…"


def without_env_secrets(text: str, env: Mapping[str, str]) -> str:
    """``text`` with the value of each secret-named environment variable of ``env``
    (``VAST_API_KEY``, ``HF_TOKEN``, …, as ``literal_secret`` names them; eight
    characters or more) replaced by ``$NAME``: a destroy command that echoes its key
    (``--verbose``, an error that quotes the request) would show it on screen and keep it
    in the journal (h472 #4). Longer values first, so one that holds another goes whole."""
    secrets = sorted(
        ((name, value) for name, value in env.items()
         if _SECRET_NAME.fullmatch(name) and len(value) >= MIN_SECRET),
        key=lambda pair: -len(pair[1]),
    )  # fmt: skip
    for name, value in secrets:
        text = text.replace(value, f"${name}")
    return text
