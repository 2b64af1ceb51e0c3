"""Which host keys a box may present: known_hosts files read the way OpenSSH reads them.

Ours is the only check (DESIGN.md, Trust). The keys found here are handed to asyncssh
explicitly, so nothing in ssh_config (``UserKnownHostsFile none``, ``StrictHostKeyChecking
no``) can switch checking off. Keys are matched on the name OpenSSH matches them on:
``HostKeyAlias`` when one is set, else the resolved ``HostName`` with its port
(``[host]:port`` unless the port is 22) — never an ``~/.ssh/config`` alias, and never the
bare host for another port (asyncssh falls back to it; OpenSSH does not, and rented boxes
share one host name across many ports). So the line we tell the user to add, and the
``ssh-keygen -R`` we print, name what the next connection looks up.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import asyncssh
from asyncssh.public_key import get_default_certificate_algs, get_default_public_key_algs

from rgt_tui.domain.text import is_digits
from rgt_tui.transport.base import HostKeyError

DEFAULT_KNOWN_HOSTS = Path("~/.ssh/known_hosts")
# With no key recorded, ask for the key type OpenSSH asks for first, so the fingerprint
# shown is the one `ssh` and the provider's page show.
PREFERRED_HOST_KEY_ALGS = (
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "rsa-sha2-512",
    "rsa-sha2-256",
)


def known_hosts_name(host: str, port: int | None) -> str:
    """The name OpenSSH writes into known_hosts for ``host`` on ``port``."""
    host = host.lower()  # OpenSSH lowercases the host name before every lookup
    return host if port in (None, 22) else f"[{host}]:{port}"


def fingerprint(key: asyncssh.SSHKey) -> str:
    """``ssh-ed25519 SHA256:...``: the key type and its SHA256 fingerprint."""
    return f"{key.get_algorithm()} {key.get_fingerprint('sha256')}"


def public_line(key: asyncssh.SSHKey) -> str:
    """``ssh-ed25519 AAAA...``: the key as a known_hosts line carries it (no comment)."""
    return " ".join(key.export_public_key("openssh").decode().split()[:2])


@dataclass(frozen=True)
class Destination:
    """Where ssh_config sends a host, and what it says about its host keys."""

    host: str  # the resolved HostName
    port: int
    key_name: str  # the name known_hosts lines are matched on
    known_hosts: tuple[Path, ...]  # ssh_config's UserKnownHostsFile + GlobalKnownHostsFile
    jump: str | None  # ssh_config's ProxyJump
    # ssh_config's ProxyCommand, as one line ("" when none): asyncssh runs it and drops
    # its stderr, so a failure is said naming it.
    proxy_command: str = ""
    user: str = ""  # the login user ssh_config (or this machine's user) gives


def resolve_destination(address: str, port: int | None, username: str | None) -> Destination:
    """Resolve ``address`` through ssh_config as asyncssh will when it connects (HostName,
    Port, HostKeyAlias, Match): explicit ``port``/``username`` win, as they do there.

    Known-hosts files that ssh_config names are kept only when they are real files
    (``/dev/null`` and ``none`` add nothing). ValueError for a config asyncssh rejects.
    """
    options = asyncssh.SSHClientConnectionOptions(
        config=(),  # ~/.ssh/config, as asyncssh.connect reads it (the default here is none)
        host=address,
        port=port if port is not None else (),
        username=username if username is not None else (),
        # Only the config is wanted here: load no keys, certificates or agent identities.
        client_keys=None,
        agent_identities=None,
        x509_trusted_certs=None,
        known_hosts=None,
    )
    config = options.config
    alias = config.get("HostKeyAlias")
    name = str(alias).lower() if alias else known_hosts_name(options.host, options.port)
    named = [
        *(config.get("UserKnownHostsFile") or ()),
        *(config.get("GlobalKnownHostsFile") or ()),
    ]
    files = tuple(p for p in (Path(str(f)).expanduser() for f in named) if p.is_file())
    jump = options.tunnel if isinstance(options.tunnel, str) else None
    proxy = " ".join(options.proxy_command or ())
    user = str(options.username or "")
    return Destination(options.host, options.port, name, files, jump, proxy, user)


def parse_jump(hop: str) -> tuple[str | None, str, int | None]:
    """One ProxyJump hop, ``[user@]host[:port]`` (``[v6addr]:port`` too), as
    (user, host, port)."""
    user, _, hostport = hop.strip().rpartition("@")
    host, port = hostport, None
    if hostport.startswith("[") and "]" in hostport:
        host, _, rest = hostport[1:].partition("]")
        port = int(rest[1:]) if rest.startswith(":") and is_digits(rest[1:]) else None
    elif hostport.count(":") == 1:
        host, port_text = hostport.split(":")
        port = int(port_text) if is_digits(port_text) else None
    return user or None, host, port


@dataclass(frozen=True)
class KnownKey:
    """One key a known_hosts file holds for a name, and the file it came from."""

    key: asyncssh.SSHKey
    file: Path


@dataclass(frozen=True)
class KnownKeys:
    """What the known_hosts files say about one name: trusted host keys, trusted
    certificate authorities (``@cert-authority``) and revoked keys (``@revoked``)."""

    name: str
    files: tuple[Path, ...]  # the files read, in order (missing ones left out)
    trusted: tuple[KnownKey, ...] = ()
    authorities: tuple[KnownKey, ...] = ()
    revoked: tuple[KnownKey, ...] = ()
    # ``file:line`` of lines that name it but cannot be read (skipped, as OpenSSH does):
    # an "unknown key" error says so, not "no line for it".
    unreadable: tuple[str, ...] = ()

    def is_revoked(self, key: asyncssh.SSHKey) -> bool:
        """Whether ``key`` is marked ``@revoked`` for this name."""
        return any(k.key == key for k in self.revoked)

    def for_asyncssh(self) -> tuple[list, list, list]:
        """asyncssh's explicit ``known_hosts`` value: trusted keys, trusted CAs, revoked
        keys. A key both trusted and revoked counts as revoked, as in OpenSSH."""
        revoked = [k.key for k in self.revoked]
        trusted = [k.key for k in self.trusted if k.key not in revoked]
        authorities = [k.key for k in self.authorities if k.key not in revoked]
        return trusted, authorities, revoked

    def files_holding(self, keys: Sequence[KnownKey]) -> tuple[Path, ...]:
        """The files ``keys`` came from, each once, in reading order."""
        return tuple(dict.fromkeys(k.file for k in keys))


def read_known_keys(files: Sequence[Path], name: str) -> KnownKeys:
    """The keys ``files`` hold for ``name`` (``host`` or ``[host]:port``).

    Lines are taken one at a time, so one malformed line (OpenSSH skips those too) does not
    hide the rest of the file. A file that cannot be read counts as empty.
    """
    trusted: list[KnownKey] = []
    authorities: list[KnownKey] = []
    revoked: list[KnownKey] = []
    unreadable: list[str] = []
    read: list[Path] = []
    for path in dict.fromkeys(files):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        read.append(path)
        table = asyncssh.SSHKnownHosts()
        for number, line in enumerate(text.splitlines(), 1):
            with contextlib.suppress(ValueError, asyncssh.KeyImportError):
                table.load(line)
            if _names(line, name) and not _usable(line, name):
                unreadable.append(f"{path}:{number}")
        # No address and no port: the name alone, already in [host]:port form.
        keys, cas, bad = table.match(name, "", None)[:3]
        trusted += (KnownKey(k, path) for k in keys)
        authorities += (KnownKey(k, path) for k in cas)
        revoked += (KnownKey(k, path) for k in bad)
    return KnownKeys(
        name, tuple(read), tuple(trusted), tuple(authorities), tuple(revoked), tuple(unreadable)
    )


def _usable(line: str, name: str) -> bool:
    """Whether ``line`` alone yields a key, a CA or a revocation for ``name`` (asyncssh
    skips a key it cannot parse without a word)."""
    one = asyncssh.SSHKnownHosts()
    try:
        one.load(line)
    except (ValueError, asyncssh.KeyImportError):
        return False
    return any(one.match(name, "", None)[:3])


def _names(line: str, name: str) -> bool:
    """Whether a known_hosts ``line`` (a marker first, or not) lists ``name`` plainly
    among its host names (not a pattern, not hashed)."""
    fields = line.split()
    if fields and fields[0].startswith("@"):
        fields = fields[1:]
    return bool(fields) and name in fields[0].split(",")


def host_key_algs(known: KnownKeys) -> list[str]:
    """The host key algorithms to ask for: certificates first where a CA is trusted, then
    the recorded keys' types (so a box with several keys shows the recorded one), then
    every other plain key type (so a box that changed key type is "changed", not a failed
    negotiation). Never a certificate where no CA is trusted: the plain key is what the
    user can compare and trust."""
    trusted, authorities, _ = known.for_asyncssh()
    certs = [a.decode() for a in get_default_certificate_algs()] if authorities else []
    recorded = [a.decode() for key in trusted for a in key.sig_algorithms]
    plain = [a.decode() for a in get_default_public_key_algs()]
    preferred = [a for a in PREFERRED_HOST_KEY_ALGS if a in plain]
    return list(dict.fromkeys([*certs, *recorded, *preferred, *plain]))


@dataclass
class KeyVerdict:
    """What the host-key check saw during one connection attempt, for the error after
    asyncssh refuses (or the line to record after accept-new let a new key in)."""

    known: KnownKeys
    accept_new: bool = False
    presented: asyncssh.SSHKey | None = None
    presented_ca: asyncssh.SSHKey | None = None  # signer of a certificate no CA line trusts
    revoked: bool = False
    accepted: asyncssh.SSHKey | None = None  # a first key accept-new let in

    def check_key(self, key: asyncssh.SSHKey) -> bool:
        """asyncssh asks about a plain key that no trusted line holds: refuse it, unless
        the host opted into accept-new and nothing is recorded for the name yet."""
        self.presented = key
        if self.known.is_revoked(key):
            self.revoked = True
            return False
        if self.accept_new and not self.known.trusted:
            self.accepted = key
            return True
        return False

    def check_authority(self, key: asyncssh.SSHKey) -> bool:
        """asyncssh asks about a certificate's signer that no @cert-authority line trusts."""
        self.presented_ca = key
        self.revoked = self.revoked or self.known.is_revoked(key)
        return False


def key_error(
    host: str, verdict: KeyVerdict, primary: Path, reason: str, jump_host: str | None = None
) -> HostKeyError:
    """The HostKeyError for a refused host key: unknown, changed or revoked, each with the
    fingerprints and the exact fix. ``primary`` is where trusted keys are added;
    ``reason`` is asyncssh's refusal (used only when no callback saw the key);
    ``jump_host`` names the ProxyJump hop when it was the hop's key: every message then
    says the key is that jump host's, not the box's."""
    lead = f"jump host {jump_host} (the ProxyJump to {host}): " if jump_host else ""
    error = _key_error(host, verdict, primary, reason, lead, jump_host)
    error.jump_host = jump_host
    return error


def _key_error(
    host: str,
    verdict: KeyVerdict,
    primary: Path,
    reason: str,
    lead: str,
    jump_host: str | None,
) -> HostKeyError:
    known, name = verdict.known, verdict.known.name
    presented = verdict.presented
    # asyncssh refuses a revoked key itself, before asking us: its reason says so.
    if verdict.revoked or reason.lower().startswith(
        ("host key is revoked", "host ca key is revoked")
    ):
        shown = presented or verdict.presented_ca
        fp = fingerprint(shown) if shown else " or ".join(fingerprint(k.key) for k in known.revoked)
        files = ", ".join(str(f) for f in known.files_holding(known.revoked)) or str(primary)
        return HostKeyError(
            host,
            f"{lead}host key {fp} for {name} is marked @revoked in {files}",
            "do not connect to this box; ask the provider why its key was revoked",
            kind="revoked",
            presented=fp,
            known=tuple(fingerprint(k.key) for k in known.revoked),
        )
    if presented is None:
        return _certificate_error(host, verdict, primary, reason, lead)
    fp = fingerprint(presented)
    if known.trusted:
        old = tuple(fingerprint(k.key) for k in known.trusted)
        holding = known.files_holding(known.trusted)
        remove = " && ".join(
            f"ssh-keygen -R {shlex.quote(name)} -f {shlex.quote(str(f))}" for f in holding
        )
        return HostKeyError(
            host,
            f"{lead}HOST KEY CHANGED for {name}: {', '.join(str(f) for f in holding)} has "
            f"{', '.join(old)}, the box now shows {fp}. Expected when a box was re-created "
            "(T6); otherwise someone may be intercepting the connection",
            f"if the box was re-created, run: {remove} — then connect again and compare the "
            "new fingerprint with the one your provider shows",
            kind="changed",
            presented=fp,
            known=old,
            known_hosts_file=holding[0],
        )
    line = f"{name} {public_line(presented)}"
    append = f"echo {shlex.quote(line)} >> {shlex.quote(str(primary))}"
    if jump_host:
        fix = (
            f"compare {fp} with the jump host {jump_host}'s own fingerprint (from whoever runs "
            f"it, not the provider's fingerprint for {host}); if it is that, trust it by typing "
            f"{jump_host}, or run: {append}"
        )
    else:
        fix = f"if {fp} is the fingerprint your provider shows, trust it, or run: {append}"
    where = f"no line for {name} in {_listed(known.files, primary)}"
    missing = missing_folder(primary)
    if missing is not None:
        # A typo'd known_hosts path read as an ordinary first connection, its echo fix
        # failed, and trusting it made the typo the host's trust store (a user's hour).
        where += f" (its folder {missing} does not exist: a typo in known_hosts?)"
        fix = f"correct known_hosts in the fleet file, or create {missing} — then {fix}"
    if known.unreadable:  # a line names it, but it could not be read: say which
        where = (
            f"no usable line for {name}: {', '.join(known.unreadable)} names it but cannot be "
            "read (a key type or key missing or damaged; fix or delete that line)"
        )
    return HostKeyError(
        host,
        f"{lead}unknown host key {fp}: {where}",
        fix,
        kind="unknown",
        presented=fp,
        trust_line=line,
        known_hosts_file=primary,
    )


def _certificate_error(
    host: str, verdict: KeyVerdict, primary: Path, reason: str, lead: str
) -> HostKeyError:
    """A host certificate was refused: signed by a CA no line trusts, or not valid for
    this name (principals, dates). Nothing to trust with one keystroke."""
    known = verdict.known
    cas = tuple(fingerprint(k.key) for k in known.authorities)
    files = _listed(known.files_holding(known.authorities), primary)
    if verdict.presented_ca is not None:
        fp = fingerprint(verdict.presented_ca)
        why = (
            f"host certificate signed by CA {fp}, which no @cert-authority line for "
            f"{known.name} in {files} trusts"
        )
    else:
        fp = "certificate"
        why = f"host certificate refused for {known.name}: {reason}"
    return HostKeyError(
        host,
        lead + why,
        f"check the box's HostCertificate (its CA, principals and validity) and the "
        f"@cert-authority lines in {files}",
        kind="changed",
        presented=fp,
        known=cas,
        known_hosts_file=known.files_holding(known.authorities)[0] if cas else None,
    )


def _listed(files: Sequence[Path], primary: Path) -> str:
    return ", ".join(str(f) for f in files) or str(primary)


def append_line(path: Path, line: str) -> Path:
    """Append one known_hosts line to ``path`` (file 0600, folder 0700 when created);
    a line already there is not written twice."""
    path = path.expanduser()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "r+b") as f:
        existing = f.read()
        if line.encode() in existing.splitlines():
            return path
        lead = b"\n" if existing and not existing.endswith(b"\n") else b""
        f.write(lead + line.encode() + b"\n")
        f.flush()
        os.fsync(f.fileno())
    return path


def trust_host_key(error: HostKeyError) -> Path:
    """Append an unknown key's line (``error.trust_line``) to ``error.known_hosts_file``,
    after the user compared the fingerprint and confirmed; returns that file.

    ValueError for anything but an unknown-key error: a changed or revoked key is never
    trusted this way (a changed one needs its old line removed first, as the fix says).
    """
    if error.kind != "unknown" or not error.trust_line or error.known_hosts_file is None:
        raise ValueError(
            f"{error.host}: only an unknown host key can be trusted here (this one is "
            f"{error.kind}): {error.fix}"
        )
    missing = missing_folder(error.known_hosts_file)
    if missing is not None:
        raise ValueError(
            f"{error.host}: the known_hosts folder {missing} does not exist: correct "
            "known_hosts in the fleet file (a typo?), or create the folder, then trust again"
        )
    return append_line(error.known_hosts_file, error.trust_line)


def missing_folder(path: Path) -> Path | None:
    """The folder of a known_hosts file the user named that does not exist (made for the
    default ~/.ssh/known_hosts only, as ssh does); None when there is nothing to say."""
    if path == DEFAULT_KNOWN_HOSTS or path.expanduser() == DEFAULT_KNOWN_HOSTS.expanduser():
        return None
    folder = path.expanduser().parent
    return None if folder.is_dir() else folder
