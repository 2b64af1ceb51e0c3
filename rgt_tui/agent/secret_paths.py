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
"""

SECRET_PATHS = (
    ".ssh", ".netrc", ".aws", ".config/gcloud", ".cache/huggingface/token", ".git-credentials",
    ".rgt/credentials.env", ".rgt/.credentials.env.*",
)  # fmt: skip
SECRET_RULE = "skipped by rule: secret"  # the reason a secret is not pulled starts so


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
