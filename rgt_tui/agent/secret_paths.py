"""Paths never pulled: credentials a home keeps. Stdlib only, Python 3.6 grammar.

The one list: the on-box manifest scan (bundled with it) skips them without reading them,
and the client (``rgt_tui.domain.manifest``) refuses them again, since the scan's output
is not trusted. Compared per path component, ASCII case-folded, wherever they appear in
a pulled path (``pull = ["/home"]`` holds other homes). A component ending in ``*``
matches any name that starts with what comes before the star.

``.rgt/credentials.env`` is the file a launch writes the user's tokens to (U34,
``rgt_tui.services.credentials``); ``.rgt/.credentials.env.*`` the temp file the box's
control script writes it through. A root's own ``.rgt`` is reserved anyway; these keep
the file out of a pull whose root lies above a home (``/home``, a HOME under
``/workspace``).

``OWN_STATE_PATHS`` are rgt-tui's own runtime files: the queue's lock in a box's ``~/.rgt``,
empty by design (taken with flock, never written), and the staging folders of a push. They are no result, and a pull above a
home would bring it home as a zero-byte file, which verify rightly flags, locking the gate
for good. The scan skips them the same way, with ``OWN_STATE_RULE``. Every reason a path
is left on the box on purpose starts with ``SKIP_RULE``: verify shows such a path as
skipped and the teardown gate's re-scan does not count it as a change
(``skipped_by_rule``), so the two agree.

The box's own ``~/.rgt`` (``own_records``) is skipped whole the same way, wherever a pull
root holds it (``/``, ``/home``, a home under ``/workspace``): rgt-tui's records there
(the queue, its logs, the runner scripts, the box id) are never results, so they are
never walked; a pull brings the queue's logs into ``.rgt/box-logs`` anyway. It is met by
name under the real home, or at its real path when ``~/.rgt`` is a link; a root inside it
(the pull of those logs) is walked as any other.
"""

import os

SECRET_PATHS = (
    ".ssh", ".netrc", ".aws", ".config/gcloud", ".cache/huggingface/token", ".git-credentials",
    ".rgt/credentials.env", ".rgt/.credentials.env.*",
    # Token files of common tools (GitHub's CLI, Hugging Face's old place, direnv, PyPI,
    # npm, PostgreSQL, Kaggle, Docker) and shell and REPL histories, where a typed
    # ``export HF_TOKEN=…`` stays (a user's hour pulled a box's .bash_history home).
    ".config/gh", ".huggingface/token", ".envrc", ".pypirc", ".npmrc", ".pgpass",
    ".kaggle/kaggle.json", ".docker/config.json",
    ".bash_history", ".zsh_history", ".sh_history", ".python_history", ".psql_history",
    ".mysql_history",
)  # fmt: skip
# The staging folders of a resume move's push and of a sync (and the sync's record): a
# push cut off leaves one until the next move or sync there removes it, and a pull that
# brought its part files home failed verify on them, locking the gate (h573 #1).
OWN_STATE_PATHS = (".rgt/queue.lock", ".rgt-resume.*", ".rgt-sync.*")
SKIP_RULE = "skipped by rule: "  # every reason a path is left on the box on purpose starts so
SECRET_RULE = SKIP_RULE + "secret"  # the reason a secret is not pulled starts so
OWN_STATE_RULE = SKIP_RULE + "rgt-tui's own state"  # and one of OWN_STATE_PATHS so


OWN_RECORDS_REASON = (
    OWN_STATE_RULE + " (~/.rgt: rgt-tui's records on this box, never results; "
    "its queue logs come with every pull into .rgt/box-logs)"
)


def own_records():
    """The byte paths at which a walk may meet this box's own ``~/.rgt``: by name under
    the real home, and its real path when it is a link."""
    home = os.path.realpath(os.fsencode(os.path.expanduser("~")))
    named = os.path.join(home, b".rgt")
    return frozenset((named, os.path.realpath(named)))


def skipped_by_rule(reason):
    """Whether a refusal's ``reason`` says the path was left on the box on purpose (a
    secret, rgt-tui's own state): shown, never a problem, never a change on the box."""
    return reason.startswith(SKIP_RULE)


def names_match(secret, parts):
    """Whether the folded components ``parts`` are the secret's components, one by one:
    equal, or (a secret component ending in ``*``) starting with what precedes the star.
    For str and bytes alike: the scan walks bytes, the client reads str."""
    if len(parts) != len(secret):
        return False
    for i, want in enumerate(secret):
        if want[-1:] in ("*", b"*"):
            if not parts[i].startswith(want[:-1]):
                return False
        elif parts[i] != want:
            return False
    return True
