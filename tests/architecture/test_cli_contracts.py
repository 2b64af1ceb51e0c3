"""The command line's two import contracts (pyproject's [tool.importlinter]) hold today and
fail on a planted violation: nothing imports `rgt_tui.cli` — the package, so a module new
to it is covered unlisted — and the command line never imports `rgt_tui.transport`.

The contracts are checked by the real `lint-imports` on a copy of the package, so the
planted lines never touch the working tree."""

from __future__ import annotations

from pathlib import Path

from support.import_contracts import contracts, copy_of_the_package, plant

NOTHING_IMPORTS_CLI = "Nothing imports the command line"
CLI_NOT_TRANSPORT = "The command line reaches boxes through the services, never the transport"


def test_the_command_line_contracts_hold(tmp_path: Path) -> None:
    verdicts = contracts(copy_of_the_package(tmp_path))
    assert verdicts[NOTHING_IMPORTS_CLI] == verdicts[CLI_NOT_TRANSPORT] == "KEPT", verdicts


def test_a_planted_import_of_the_transport_or_of_the_command_line_breaks_them(
    tmp_path: Path,
) -> None:
    package = copy_of_the_package(tmp_path) / "rgt_tui"
    plant(package / "cli" / "status.py", "from rgt_tui.transport import transport_for")
    # A module new to the command line, imported from below it: covered without a listing.
    (package / "cli" / "brand_new.py").write_text('"""Planted."""\n')
    plant(package / "services" / "box" / "status.py", "import rgt_tui.cli.brand_new")
    verdicts = contracts(tmp_path)
    assert verdicts[NOTHING_IMPORTS_CLI] == verdicts[CLI_NOT_TRANSPORT] == "BROKEN", verdicts
