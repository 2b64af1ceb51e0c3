"""Paths never pulled: credentials a home keeps. Stdlib only, Python 3.6 grammar.

The one list: the on-box manifest scan (bundled with it) skips them without reading them,
and the client (``rgt_tui.domain.manifest``) refuses them again, since the scan's output
is not trusted. Compared per path component, ASCII case-folded, wherever they appear in
a pulled path (``pull = ["/home"]`` holds other homes).
"""

SECRET_PATHS = (
    ".ssh", ".netrc", ".aws", ".config/gcloud", ".cache/huggingface/token", ".git-credentials",
)  # fmt: skip
SECRET_RULE = "skipped by rule: secret"  # the reason a secret is not pulled starts so
