"""Credentials over stdin (U34): read where each secret is on this machine, send the
values to the box over the channel's stdin, and remove them at teardown.

A host's ``ready.credentials`` names only where each value is (``domain.config.Credential``:
an environment variable, a ``~/.netrc`` machine, a file). The values are read here at send
time, turned into ``export NAME='value'`` lines and written by the box's control script
(``queue_ctl.sh credentials``) to ``~/.rgt/credentials.env``, mode 0600, which
``run_one.sh`` exports into every cell. A value is never on a command line (the verb's
only argument is the payload's size), in a log, a plan, an exception or a repr: it lives
in local variables of ``send_credentials`` and nowhere else.

A launch that names no credentials removes the file an earlier launch left
(``launch_credentials``): its cells must not run with tokens the fleet file no longer
names, and the file must not wait on the box for the teardown.
"""

from __future__ import annotations

import dataclasses
import netrc
import os
import re
import shlex
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from rgt_tui.domain.config import Credential
from rgt_tui.services.box_ctl import QueueError, refusal, run_ctl
from rgt_tui.transport import Transport

BOX_FILE = "~/.rgt/credentials.env"  # for messages; queue_ctl.sh writes $HOME/.rgt/...
MAX_FILE_BYTES = 64 * 1024  # a token file is a few hundred bytes: more is the wrong file


class CredentialError(QueueError):
    """A credential's value could not be read on this machine, or the box refused it.

    The message names the credential, its source and the fix; never the value.
    """

    def __init__(self, host: str, message: str) -> None:
        super().__init__(host, message, code="credentials")


# Makes the error for one credential from what went wrong and its fix.
Fail = Callable[[str, str], "CredentialError"]


def describe(cred: Credential) -> str:
    """``WANDB_API_KEY (netrc api.wandb.ai)``: what a plan may show (no value)."""
    return f"{cred.name} ({cred.source} {cred.ref})"


def plan_line(credentials: Iterable[Credential]) -> str:
    """What a launch plan says it will send: the names and sources, never a value."""
    listed = ", ".join(describe(c) for c in credentials)
    return f"{listed} → {BOX_FILE} (0600, exported to each cell)" if listed else ""


def resolve(
    host: str,
    cred: Credential,
    *,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> str:
    """The value of one credential, read on this machine now.

    ``env``: the variable ``ref`` of this process's environment; ``netrc``: the password
    of machine ``ref`` in ``<home>/.netrc`` (that machine's own entry, never the netrc's
    ``default``: another service's secret must not go out under this name); ``file``: the
    file's text, at most 64 KiB, trailing line ends stripped. CredentialError otherwise.
    """
    environ = os.environ if environ is None else environ
    where = describe(cred)

    def fail(why: str, fix: str) -> CredentialError:
        return CredentialError(host, f"credential {where}: {why} — {fix}")

    if cred.source == "env":
        value = environ.get(cred.ref)
        if value is None:
            raise fail(
                f"the variable {cred.ref} is not set in rgt-tui's environment",
                f"export {cred.ref}=… in the shell that starts rgt-tui, or name another source",
            )
    elif cred.source == "netrc":
        value = _netrc_password(cred, home if home is not None else Path.home(), fail)
    elif cred.source == "file":
        value = _file_text(Path(cred.ref).expanduser(), fail)
    else:
        raise fail(f"unknown source {cred.source!r}", "use env, netrc or file in hosts.toml")
    if not value:
        raise fail("the value is empty", "set it, or remove the credential from hosts.toml")
    if "\0" in value:
        raise fail(
            "the value holds a NUL byte, which no environment variable can carry",
            "point the credential at the token itself",
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        # An environment variable of bytes that are not UTF-8 (Python keeps them as
        # surrogates): sent, it would crash the launch after its plan (h543 #1).
        raise fail(
            "the value is not UTF-8 text (bytes no token holds)",
            "set it again from the service's own page, or name another source",
        ) from None
    return value


def _netrc_password(cred: Credential, home: Path, fail: Fail) -> str:
    path = home / ".netrc"
    try:
        parsed = netrc.netrc(str(path))
    except FileNotFoundError:
        raise fail(f"{path} does not exist", "log in to the service (e.g. `wandb login`)") from None
    except netrc.NetrcParseError as exc:
        # Its message quotes the token it choked on, which may be a password: only the line.
        raise fail(
            f"{path} line {exc.lineno} cannot be parsed", f"fix {path} line {exc.lineno}"
        ) from None
    except OSError as exc:
        raise fail(f"cannot read {path}: {exc.strerror}", f"check {path}'s permissions") from None
    except UnicodeDecodeError:  # bytes no token holds (review h544 #7: a traceback)
        raise fail(
            f"{path} is not UTF-8 text", f"fix {path}, or log in to the service again"
        ) from None
    entry = parsed.hosts.get(cred.ref)
    if entry is None:
        raise fail(
            f"{path} has no machine {cred.ref}",
            "log in to the service (`wandb login` writes machine api.wandb.ai) or fix the name",
        )
    password = entry[2]
    if not password:
        raise fail(
            f"machine {cred.ref} in {path} has no password", f"add one to {path}, or log in again"
        )
    return password


def _file_text(path: Path, fail: Fail) -> str:
    try:
        # Opened without waiting, and read only when it is a regular file: a FIFO hung
        # preflight for good (no timeout, nor SIGTERM, ended it), /dev/stdin was read
        # twice, the second time empty, and a folder read "check its permissions" (h603 #7).
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise fail(f"{path} does not exist", "create it, or fix the path in hosts.toml") from None
    except OSError as exc:
        raise fail(f"cannot read {path}: {exc.strerror}", f"check {path}'s permissions") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise fail(
            f"{path} is not a regular file (a folder, a pipe or a device)",
            "point the credential at the file that holds the token",
        )
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as f:
        try:
            data = f.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise fail(
                f"cannot read {path}: {exc.strerror}", f"check {path}'s permissions"
            ) from None
    if len(data) > MAX_FILE_BYTES:
        raise fail(
            f"{path} is over {MAX_FILE_BYTES // 1024} KiB: not a token",
            "point the credential at the file that holds only the token",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise fail(f"{path} is not UTF-8 text", "point the credential at a text file") from None
    # Every line end after the token goes: an editor's or `echo`'s extra blank line sent
    # as part of the value breaks an HTTP header (h543 #5). Inside the text, a line end
    # stays (a PEM key is lines).
    return text.rstrip("\r\n")


def env_file_text(values: Iterable[tuple[str, str]]) -> str:
    """The box's credentials file: one ``export NAME='value'`` line per credential, each
    value quoted for bash (run_one.sh sources the file)."""
    return "".join(f"export {name}={shlex.quote(value)}\n" for name, value in values)


async def send_credentials(
    host: str,
    credentials: Iterable[Credential],
    transport: Transport,
    *,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> tuple[str, ...]:
    """Read every credential here, then write them to the box's ``~/.rgt/credentials.env``
    (0600) in one round trip, the values on stdin; returns the names sent.

    Every value is read before anything is sent: one missing value sends none.
    """
    creds = tuple(credentials)
    values = [(c.name, resolve(host, c, environ=environ, home=home)) for c in creds]
    text = env_file_text(values)
    result = await run_ctl(transport, "credentials", len(text.encode("utf-8")), input=text)
    # A box whose shell echoes its input (an rc file reading stdin) sends the values back:
    # masked in its whole answer, before any of it is cut to be shown (h512 #1; a value
    # cut in half was shown in part: review h514 #10).
    secrets = [v for _, v in values]
    result = dataclasses.replace(
        result, stdout=masked(result.stdout, secrets), stderr=masked(result.stderr, secrets)
    )
    error = refusal(host, result)
    if error is not None:
        raise CredentialError(host, f"the box refused the credentials: {error.message}")
    if "credentials\tok" not in result.stdout.splitlines():
        raise CredentialError(
            host,
            f"the box did not confirm {BOX_FILE} was written (its answer is not shown: it "
            "may hold the values sent, echoed back) — run `rgt-tui shell "
            f"{host}` and look at what its login prints",
        )
    return tuple(c.name for c in creds)


def masked(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each secret written as [hidden]: as sent, as quoted for bash, and
    each piece of it that quoting splits apart (``'\\''``, as ``set -x`` shows it)."""
    forms = set()
    for secret in secrets:
        # Each piece between the characters a shell or a printout splits or escapes
        # (line ends, quotes, blanks, backslashes, $): a value echoed unquoted, or as
        # `printf %q` or repr() shows it, no longer matches whole (h545 #5: all but its
        # first piece was shown). A PEM key's lines are such pieces too.
        pieces = re.split(r"[\s'\"\\$`]+", secret)
        forms |= {secret, shlex.quote(secret), repr(secret)[1:-1], *pieces}
    for form in sorted(forms, key=len, reverse=True):
        if len(form) >= 4:  # a 1-3 character piece would hide ordinary words
            text = text.replace(form, "[hidden]")
    return text


async def remove_credentials(host: str, transport: Transport) -> bool:
    """Delete the box's ``~/.rgt/credentials.env``; True when there was one to delete.

    QueueError when the box refuses (the message names the file and the fix);
    TransportError when it cannot be reached.
    """
    result = await run_ctl(transport, "credentials-remove")
    error = refusal(host, result)
    if error is not None:
        raise error
    return "removed\t1" in result.stdout.splitlines()


async def launch_credentials(
    host: str, credentials: Iterable[Credential], transport: Transport
) -> str:
    """What a launch does with the box's credentials file, before its runner starts: write
    it when the launch names credentials (``send_credentials``), else remove the one an
    earlier launch left. The one line to show for it: "" unless an earlier file was
    removed (a write is shown by the plan, ``plan_line``)."""
    creds = tuple(credentials)
    if creds:
        await send_credentials(host, creds, transport)
        return ""
    if await remove_credentials(host, transport):
        return f"credentials: removed an earlier {BOX_FILE} from {host} (this launch sends none)"
    return ""
