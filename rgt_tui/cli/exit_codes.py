"""Every exit status of the `rgt-tui` command line, defined once.

| code | name | meaning |
| --- | --- | --- |
| 0 | `EXIT_OK` | done: everything pulled / verified / reachable, the checklist holds (`teardown --check`), the box torn down, `logs --follow` or `tunnel` ended by Ctrl-C |
| 1 | `EXIT_PROBLEMS` | the command ran and found problems: a host unreachable or its host key refused, a failed check, a refused or locked action, an incomplete pull, no log yet |
| 2 | `EXIT_BAD_INPUT` | nothing was done, the input is wrong: the arguments, the fleet file, an unknown host, a name that is not a cell of the queue, `launch` with no terminal to ask and no `--yes` |
| 3 | `EXIT_ALERTS` | `status` only: every host answered, and at least one has a warning or critical alert (info alerts do not count); 1 wins when a host is unreachable as well |
| 130 | `EXIT_INTERRUPTED` | stopped by Ctrl-C (128 + SIGINT, as a shell reports it); a pull keeps what arrived |
| 143 | `EXIT_TERMINATED` | stopped by SIGTERM (`timeout`, systemd, a CI cancel): the same clean stop as Ctrl-C (its message, its parts kept, a sync's upload stopped), 128 + SIGTERM |
| 141 | `EXIT_READER_GONE` | the reader of the output went away (`rgt-tui queue show` piped into `head -1`): ended quietly, as SIGPIPE ends other tools (128 + 13) |

argparse's own usage errors exit 2 as well, so a script sees one code for bad input.
"""

from __future__ import annotations

from typing import Final

EXIT_OK: Final = 0
EXIT_PROBLEMS: Final = 1
EXIT_BAD_INPUT: Final = 2
EXIT_ALERTS: Final = 3  # status: all reachable, warning/critical alerts present
EXIT_INTERRUPTED: Final = 130
EXIT_TERMINATED: Final = 143
EXIT_READER_GONE: Final = 141  # stdout's reader closed the pipe
