"""`python -m rgt_tui` runs the command line."""

from rgt_tui.cli import main

raise SystemExit(main())
