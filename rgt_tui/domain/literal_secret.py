"""A secret written into a command of the fleet file (``teardown``, ``run``).

A provider's destroy command with ``--api-key 9f8e…`` is on that command's command line
while it runs (``ps``, the shell's history of whoever reads the file) and was shown in
the teardown checklist; a run template with ``WANDB_API_KEY=…`` is written into the
box's queue scripts and logs. ``[fleet.credentials]`` refuses a secret itself; these
commands took one silently (h462 #4). A value taken from the environment (``"$KEY"``)
is the user's way out and passes. Pure.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping

# A flag that takes a secret: --api-key, --apikey, --token, --password, --hub_token, …
# Not any *_token: a tokenizer's --pad_token "<|endoftext|>" is no secret.
_FLAG = re.compile(
    r"--?(?:(?:[a-z0-9]+[-_])*api[-_]?key|api[-_]?token|access[-_]?key|secret[-_]?key|"
    r"auth[-_]?token|access[-_]?token|(?:hub|hf|github|gh|wandb)[-_]?(?:token|key)|token|"
    r"password|passwd)"
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
# A header that carries one, as curl's -H / --header gives it: "Authorization: Bearer …",
# "X-API-Key: …", GitLab's "PRIVATE-TOKEN: …". Named ones only: X-Cache-Key is none.
_HEADER = re.compile(
    r"\s*(?P<name>(?:proxy-)?authorization|x-api-key|x-api-token|api-?key|x-auth-token|"
    r"x-access-token|private-token|x-goog-api-key|x-vault-token)\s*:\s*"
    r"(?:(?:bearer|basic|token)\s+)?(?P<value>\S+)\s*",
    re.IGNORECASE,
)
# A URL's query parameter that carries one: …?api_key=…, &access_token=…
_QUERY = re.compile(
    r"[?&](?P<name>api[-_]?key|apikey|key|token|access[-_]?token|auth|secret|password)"
    r"=(?P<value>[^&#\s]*)",
    re.IGNORECASE,
)
# A URL's password: https://user:ghp_…@github.com/… (not a port and a query's "@":
# http://localhost:8080?email=a@b.com)
_URL_PASSWORD = re.compile(r"://[^/@:\s?#]+:(?P<value>[^/@\s?#]+)@")
# A token as a URL's user, as GitHub and Hugging Face take one: https://ghp_…@github.com/…
# (h553 #9). By the providers' own token prefixes: a plain user name is no secret.
_TOKEN_PREFIXES = r"(?:gh[opsur]_|github_pat_|glpat-|hf_)"
_URL_TOKEN_USER = re.compile(rf"://(?P<value>{_TOKEN_PREFIXES}[A-Za-z0-9_-]{{8,}})@")
# A provider's token whole, in its own shape (random letters and digits after the prefix,
# as the providers issue them): where a name of one's source was asked (h573 #3). Not
# ``hf_token_for_cluster`` nor ``glpat-ci-runner-project``: names (review h574 #2).
_TOKEN = re.compile(
    r"(?:gh[opsur]_|github_pat_|glpat-|hf_)(?P<body>"
    r"(?<=gh._)[A-Za-z0-9]{30,}|(?<=github_pat_)[A-Za-z0-9_]{50,}"
    r"|(?<=glpat-)[A-Za-z0-9_.-]{20,}|(?<=hf_)[A-Za-z0-9]{30,})"
)
# Where one shell command ends and the next begins: curl's -u is asked of curl's own.
_SEPARATORS = frozenset({";", "&&", "||", "|", "&"})
# Programs whose quoted word is a command they run (a teardown through ssh: h483 #4).
_RUN_A_WORD = frozenset({"ssh", "eval", "tmux", "screen", "su", "runuser", "nohup", "timeout"})
_HTTPIE = frozenset({"http", "https", "xh"})
_WRAPPERS = frozenset({"sudo", "env", "nohup", "timeout", "time", "exec", "command", "xargs"})
# What shlex splits on: a word holding one of these is a command of its own (sh -c "…").
_SHELL_SPACE = frozenset(shlex.shlex().whitespace)
_NESTED = 3  # sh -c "bash -c '…'" read this deep, no deeper
# Shorter values are no secret (a flag's "1", a placeholder "x"); a key is longer.
MIN_SECRET = 8
PLAIN_KEY_CHARS = 20  # a URL's bare key= value this long is a key, not a split's name


def literal_secret(command: str, _depth: int = 0) -> str | None:
    """``--api-key 9f8e…`` or ``HF_TOKEN=hf_a…``: the first secret written literally in
    ``command``, its value cut to four characters; None when there is none (or the value
    comes from the environment, ``$NAME``). Also curl's header (``-H "Authorization:
    Bearer …"``) and ``-u KEY:``, a URL's ``?api_key=…`` or password, ``wandb login KEY``,
    and any of these in the command a shell's ``-c`` runs, which a review found passed
    (s46 #7). Only there: a quoted run name or note (``--notes "try --token embeddings"``)
    is prose, not a command. A command shlex cannot split is read as
    whitespace-separated words."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    # The programs of the simple command the word is in (up to ; && | …): its first word,
    # and the one a wrapper runs (sudo, env, timeout 30, NAME=value …).
    programs: set[str] = set()
    runs_next, wrapped = True, False
    for i, word in enumerate(words):
        before = words[i - 1] if i else ""
        after = words[i + 1] if i + 1 < len(words) else ""
        if before in _SEPARATORS or before.endswith((";", "|", "&")):
            programs, runs_next, wrapped = set(), True, False
        wandb_login = i >= 2 and before == "login" and posixpath.basename(words[i - 2]) == "wandb"
        found = (
            _in_command_word(before, word, programs, _depth)
            or _in_header(before, word, programs)
            or _in_url(word)
            or (_in_curl_user(word, after) if "curl" in programs else None)
            or _in_flag(word, after, wandb_login=wandb_login)
            or _in_assignment(word)
        )
        if found:
            return found
        if runs_next and not (wrapped and word.startswith("-")):  # sudo -E curl: curl's
            program = posixpath.basename(word)
            programs.add(program)
            wrapped = program in _WRAPPERS
            runs_next = wrapped or bool(_ASSIGN.fullmatch(word)) or word.isdigit()
    return None


def _in_command_word(before: str, word: str, programs: set[str], depth: int) -> str | None:
    """``sh -c "…"``, ``bash -lc '…'``, ``ssh host "…"``, ``tmux new "…"``, ``eval "…"``:
    the command in the word, read as one (review h483 #4: a teardown run through ssh)."""
    if depth >= _NESTED:
        return None
    if not re.fullmatch(r"-[a-zA-Z]*c", before) and not programs & _RUN_A_WORD:
        return None
    if not _SHELL_SPACE.intersection(word):
        return None
    return literal_secret(word, depth + 1)


def _in_header(before: str, word: str, programs: set[str]) -> str | None:
    """curl's ``-H "Authorization: Bearer …"`` (also ``-H"…"`` and ``--header=…``), and
    httpie's ``Authorization:"Bearer …"`` word."""
    if before in ("-H", "--header") or programs & _HTTPIE:
        text = word
    elif word.startswith("--header="):
        text = word.removeprefix("--header=")
    elif word.startswith("-H") and len(word) > 2:
        text = word[2:]
    else:
        return None
    header = _HEADER.fullmatch(text)
    if header is None or not _key_like(header.group("value")):
        return None
    return f"{header.group('name')}: {_cut(header.group('value'))}"


def _in_url(word: str) -> str | None:
    """A URL's ``?api_key=…``, ``user:password@`` or ``TOKEN@`` (a provider's token). A bare ``key=`` or ``auth=`` counts
    only for a key-long value (20 characters or more: Google's are 39):
    ``?key=validation``, ``?key=train2017`` name a dataset's split."""
    if "://" not in word:
        return None
    password = _URL_PASSWORD.search(word)
    if password is not None and _key_like(password.group("value")):
        return f"a URL's password {_cut(password.group('value'))}"
    user = _URL_TOKEN_USER.search(word)
    if user is not None:
        return f"a URL's token {_cut(user.group('value'))}"
    for query in _QUERY.finditer(word):
        name, value = query.group("name"), query.group("value")
        plain = name.lower() in ("key", "auth")
        if _key_like(value) and not (plain and len(value) < PLAIN_KEY_CHARS):
            return f"{name}={_cut(value)}"
    return None


def _in_curl_user(word: str, after: str) -> str | None:
    """curl's ``-u KEY:`` or ``-u user:password`` (Lambda Cloud's API takes the key as
    the user); ``-uKEY:`` and ``--user=KEY:`` too. Asked only after a ``curl``: docker's
    ``-u user:group`` and rsync's ``-u`` (update) are no secret."""
    if word in ("-u", "--user"):
        value, name = after, word
    elif word.startswith("--user="):
        value, name = word.removeprefix("--user="), "--user"
    elif word.startswith("-u") and len(word) > 2:
        value, name = word[2:], "-u"
    else:
        return None
    user, _, password = value.partition(":")
    if _key_like(password):
        return f"{name} {_cut(password)}"
    # KEY: or KEY:x (an API key as the user, a stand-in password: h484 #7)
    return f"{name} {_cut(user)}" if _key_like(user) and _has_digit(user) else None


def _in_flag(word: str, after: str, *, wandb_login: bool) -> str | None:
    """``--api-key 9f8e…`` / ``--api-key=9f8e…``; ``wandb login KEY`` (``wandb_login``:
    the two words before ``word``)."""
    flag = _FLAG.fullmatch(word)
    if flag is not None:
        given = flag.group("value")
        value = given if given is not None else after
        return f"{word.split('=', 1)[0]} {_cut(value)}" if _literal(value) else None
    if wandb_login:
        return f"wandb login {_cut(word)}" if _literal(word) and _has_digit(word) else None
    return None


def _in_assignment(word: str) -> str | None:
    """``HF_TOKEN=hf_…`` (also docker's ``--env=HF_TOKEN=…``). A secret key's value may
    hold a ``/`` (half of AWS's do): it is no path there."""
    assign = _ASSIGN.fullmatch(word.removeprefix("--env="))
    if assign is None or not _SECRET_NAME.fullmatch(assign.group("name")):
        return None
    name, value = assign.group("name"), assign.group("value")
    keyed = name.endswith("SECRET_KEY") or name.endswith("SECRET_ACCESS_KEY")
    path = value.startswith(("/", "~", "."))  # SECRET_KEY=./secret.key: the file
    if (keyed and _key_like(value) and not path) or _literal(value):
        return f"{name}={_cut(value)}"
    return None


def _literal(value: str) -> bool:
    """A value written out: long enough to be a key, not taken from the environment, not
    a number (``MAX_TOKENS=10000000``), a path (``SSH_KEY=~/.ssh/id``: the file, not the
    secret) or a template's field (``{cfg}``)."""
    return _key_like(value) and not value.startswith(("-", "/", "~", ".")) and "/" not in value


def _key_like(value: str) -> bool:
    """Long enough to be a key, written out (not ``$NAME``, ``$(cmd)`` or a field), one
    word (``--run_name "HF_TOKEN=unset baseline"`` is prose)."""
    return (
        len(value) >= MIN_SECRET
        and not _SHELL_SPACE.intersection(value)
        and not value.startswith("$")
        and not value.isdigit()
        and "{" not in value
    )


def _has_digit(value: str) -> bool:
    return any(c.isdigit() for c in value)


def _cut(value: str) -> str:
    return value[:4] + "…"


# A key of no known prefix, as W&B (40 hex digits) and many APIs issue them: letters and
# digits alone, long, both kinds (h603 #3: printed back whole as "the variable a3f9… is
# not set"). No name of a variable, a host or a file is 32 such characters.
_BARE_KEY = re.compile(r"(?=[A-Za-z0-9]*[0-9])(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{32,}")


# Keys whose provider's shape is also a valid variable name, so ENV_NAME_RE let them
# through to "AKIAIOSFODNN7EXAMPLE is not set here" (s60's note): an AWS access key id,
# Stripe's secret and restricted keys, a Google API key written without a '-'.
_SHAPED_KEY = re.compile(
    r"(?:AKIA|ASIA)[A-Z0-9]{16}|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|AIza[A-Za-z0-9_-]{35}"
)


def looks_like_a_key(value: str) -> bool:
    """Whether ``value`` is a token by its provider's shape (``hf_…``, ``AKIA…``,
    ``sk_live_…``), or a bare key (32+ letters and digits, both): never a variable's name
    nor a file's."""
    return (
        is_provider_token(value)
        or _BARE_KEY.fullmatch(value) is not None
        or _SHAPED_KEY.fullmatch(value) is not None
    )


def is_provider_token(value: str) -> bool:
    """Whether ``value`` is a token by its provider's own prefix and shape (``hf_…``,
    ``ghp_…``, ``glpat-…``), written out whole: never a variable's name nor a file's."""
    # Mixed case: a random token has both (Hugging Face's are letters alone, no digit:
    # h575 #4); a name written in one case (glpat-ci-runner-project-main) is a name.
    found = _TOKEN.fullmatch(value)
    body = found.group("body") if found else ""  # the prefix is lower case: not counted
    return any(c.isupper() for c in body) and any(c.islower() for c in body)


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
