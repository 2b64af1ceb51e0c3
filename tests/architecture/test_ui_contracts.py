"""The UI's import contracts (pyproject's [tool.importlinter]) hold today, and each breaks
on a planted import it exists to refuse (issue 28):

- a screen importing ``rgt_tui.transport`` (a layers contract alone lets a layer skip
  the ones below it, so the forbidden contract is what refuses it);
- a controller importing Textual, or a screen (the layers, each UI layer on its own line);
- two sibling modules importing each other (``acyclic_siblings``).

Each plant runs the real ``lint-imports`` on a copy of the package, alone, so the one
contract it breaks is the one that refuses it, and the others stay kept.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.import_contracts import contracts, copy_of_the_package, plant

LAYERS = "The layers of DESIGN.md, each UI layer on its own line"
NO_TEXTUAL = "Below the UI, nothing imports Textual"
UI_NOT_TRANSPORT = "The UI reaches boxes through the services, never the transport"
ACYCLIC = "Sibling modules form no import cycle"
UI_CONTRACTS = (LAYERS, NO_TEXTUAL, UI_NOT_TRANSPORT, ACYCLIC)


def test_the_ui_contracts_hold(tmp_path: Path) -> None:
    verdicts = contracts(copy_of_the_package(tmp_path))
    assert {name: verdicts.get(name) for name in UI_CONTRACTS} == dict.fromkeys(
        UI_CONTRACTS, "KEPT"
    ), verdicts
    assert set(verdicts.values()) == {"KEPT"}, verdicts


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("screens/help.py", "from rgt_tui.transport import ssh", {UI_NOT_TRANSPORT}),
        ("controllers/workers.py", "import textual.widget", {NO_TEXTUAL}),
        # Upwards from a controller to a screen: a layers breach; the two rooms then
        # import each other (screens use the controllers), a cycle of siblings; and the
        # screen brings Textual into the controller.
        ("controllers/notices.py", "import rgt_tui.screens.help", {LAYERS, ACYCLIC, NO_TEXTUAL}),
        # Within one room: verify/types.py is what run.py and report.py share.
        ("services/verify/types.py", "import rgt_tui.services.verify.run", {ACYCLIC}),
        # watch wires its drivers by plain imports (no importlib strings hiding them), so
        # a driver that reached back into the watcher is a cycle the contract sees.
        ("services/watch/drivers/autostop.py", "import rgt_tui.services.watch.watcher", {ACYCLIC}),
    ],
)
def test_a_planted_import_breaks_the_contract_that_refuses_it(
    tmp_path: Path, module: str, line: str, broken: set[str]
) -> None:
    package = copy_of_the_package(tmp_path) / "rgt_tui"
    plant(package / module, line)
    verdicts = contracts(tmp_path)
    assert {name for name, v in verdicts.items() if v == "BROKEN"} == broken, verdicts
