"""Small readers and the guard every sub-probe runs under (stdlib only, Python 3.6).

Rules the agent's modules live by (see ``loop.py`` for the whole agent):

- It must run on the box's own python3, which can be as old as 3.6: standard library only
  (``pynvml`` is used when importable, never required), no 3.7+ syntax or APIs, and so no
  annotations (their future import is 3.7+).
- A failing sub-probe adds one string to ``errors`` and the sample still prints; a missing
  file or tool is "not known" (null), not a crash.
- Modules import one another only as ``from .module import name`` (no alias; ``..module``
  for ``box_id``): ``rgt_tui.agent.bundle`` strips those lines and joins the modules into
  the one source sent to the box, so every top-level name is unique across the program.
"""

PROTOCOL_VERSION = 1
UNLIMITED = "unlimited"
MIB = 1024 * 1024


def read_text(path):
    """Return the text of a file (read by read(): /proc and /sys report a size of 0)."""
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def read_optional(path):
    """Return the file's text, or None when it does not exist (absent means "not known")."""
    try:
        return read_text(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def describe_error(exc):
    """One line for an exception: its type and message, never a traceback."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return f"{type(exc).__name__}: {exc}"


def safe(errors, label, fn, default=None):
    """Run one sub-probe; on any failure record "label: why" in errors and return default."""
    try:
        return fn()
    except Exception as exc:  # one odd file must not cost the whole sample
        errors.append(f"{label}: {describe_error(exc)}")
        return default
