"""What the UI says, as styled text: pure functions from domain objects and service
outcomes to Textual ``Content`` lines, shared by panes, tabs and dialogs (and worded as
the CLI twins word them). No widget lives here; widgets live in ``rgt_tui.widgets``."""
