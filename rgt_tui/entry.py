"""The `rgt-tui` console script and `python -m rgt_tui`: the command line, whose imports
take 0.5–3 s on a slow machine. A Ctrl-C in that time (the first thing a user tries
after mistyping a host) printed a traceback through twenty imports; it now ends as a
Ctrl-C does once a command runs: quietly, with 130.
"""

from __future__ import annotations

# 128 + SIGINT, as cli.exit_codes.EXIT_INTERRUPTED says: not imported from there, since
# importing anything of rgt_tui.cli runs the imports this module is here to guard.
EXIT_INTERRUPTED = 130


def main() -> int:
    try:
        from rgt_tui.cli import main as cli_main
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return cli_main()
