"""The `rgt-tui` console script and `python -m rgt_tui`: the command line, whose imports
take 0.5–3 s on a slow machine. A Ctrl-C in that time (the first thing a user tries
after mistyping a host) printed a traceback through twenty imports; it now ends as a
Ctrl-C does once a command runs: quietly, with 130.
"""

from __future__ import annotations

import warnings

# cryptography 51 deprecates DSA and asyncssh, which still supports DSA keys, warns on
# its first import: a two-line warning on stderr before every command's own output
# (and `watch`'s log, a script's parse). Nothing of it is the user's to act on; only
# that warning, from asyncssh's own module, is silenced.
ASYNCSSH_DSA_WARNING = {"message": "DSA is deprecated", "module": r"asyncssh\."}


def main() -> int:
    warnings.filterwarnings("ignore", **ASYNCSSH_DSA_WARNING)
    try:
        from rgt_tui.cli import main as cli_main
    except KeyboardInterrupt:
        # 128 + SIGINT, cli.exit_codes.EXIT_INTERRUPTED: not imported from there, since
        # importing anything of rgt_tui.cli runs the imports this module guards.
        return 130
    return cli_main()
