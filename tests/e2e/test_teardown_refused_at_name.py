"""A teardown whose typed name is refused because the box changed while it was asked for:
the checklist that refused it is printed, each locked line with what settles it (h613 #1:
the refusal said "see the checklist" with only the earlier, all-ticked one on screen)."""

from __future__ import annotations

from support.cli import Terminal
from support.teardown_ui import results_on_box
from test_teardown_e2e import Cli


async def test_a_box_changed_at_the_question_prints_the_checklist_that_refused_it(
    loopback_fleet, tmp_path
):
    root = loopback_fleet.box("box1").root
    results_on_box(root)
    cli = Cli(loopback_fleet.hosts_file, tmp_path / "state", tmp_path)
    assert (await cli("pull", "box1")).returncode == 0
    assert (await cli("verify", "box1")).returncode == 0
    term = Terminal("teardown", "box1", cwd=tmp_path, env=cli.env)
    await term.expect("Type the host's name (box1) to tear it down: ")
    (root / "results" / "late.json").write_text("{}")  # written while the question waited
    term.type("box1")
    code, out, err = await term.finish()
    assert code == 1, out + err
    assert "refused: teardown refused for box1" in err and "nothing was torn down" in err, err
    assert "what settles each line is under it above" in err, err
    after = out.split("The checklist when the name was checked:", 1)
    assert len(after) == 2, out
    assert "late.json" in after[1] and "→ run `rgt-tui pull box1`" in after[1], after[1]
