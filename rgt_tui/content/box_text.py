"""Box text on the way into the UI: the one fence every screen, toast and tab goes through.

A rented box is hostile input. Its text (cell names, log lines, paths, reasons, command
output) reaches a widget in two ways that could go wrong:

- as a markup string (``Static("…")``, ``notify("…")``, a DataTable cell, a Select option,
  a button label): Textual would read ``[link=…]``, ``[@click=app.quit]`` or ``[bold]`` in
  it as markup, or raise a MarkupError that breaks the widget. The UI never hands box text
  to a widget as a markup string: it builds ``Content`` from it (``Content(text)``,
  ``Content.assemble``, ``Content.styled``, which never parse markup), and a toast that
  quotes the box is sent with ``markup=False``.
- with control characters: Textual passes an ESC, a BEL or a C1 control in a ``Content``
  to the terminal as it is (only BEL/BS/VT/FF/CR are dropped), so OSC 52 could write the
  clipboard and CSI 2J clear the screen. ``shown`` makes such text printable
  (``domain.text.printable``: ``\\x1b`` is shown as those four characters), here, where the
  builders put it on a line, whatever the parser upstream already did.
"""

from __future__ import annotations

from rgt_tui.domain.text import printable, printable_lines


def shown(text: object, *, lines: bool = False) -> str:
    """``text`` from a box as the UI shows it: every control character written as a visible
    escape (``\\x1b``), no length cap (the widget wraps or cuts). With ``lines``, newlines
    are kept and each line is made printable on its own (a multi-line toast, an error with
    its fix); without, a newline is shown as ``\\n`` so box text cannot forge a line."""
    return printable_lines(text) if lines else printable(text, None)
