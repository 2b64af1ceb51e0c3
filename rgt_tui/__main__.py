"""`python -m rgt_tui` runs the command line."""

from rgt_tui.entry import main

raise SystemExit(main())
