"""The loaded line's fix is said by the kind of each failure (h618 #4), read from verify's
own words for it (services.verify.loader): a pull settles none of these."""

from __future__ import annotations

from rgt_tui.domain.gate_fixes import fix
from rgt_tui.domain.teardown_gate import Condition

SCRIPT_CLASS = (
    "needs arbitrary code to load; not executed: WeightsUnpickler error: Unsupported global: "
    "GLOBAL __main__.Cfg — __main__.Cfg was defined in the script that saved it, which "
    "cannot be imported here: re-save its values on the box as a dict (a state_dict)"
)
NO_TORCH = (
    "not verified: no torch in /venv/bin/python (ModuleNotFoundError: No module named "
    "'torch'); fix: point [fleet] verify_python at an interpreter with torch>=2.6, or pip "
    "install 'torch>=2.6' into /venv/bin/python"
)
KEY_TYPO = (
    "not verified: [fleet] verify_safe_globals: argparse has no Namspace; did you mean "
    "argparse.Namespace? in /venv/bin/python; fix: correct the name in the fleet file"
)


def _loaded(*failures: tuple[str, str]) -> Condition:
    shown = "; ".join(f"{p}: {why}" for p, why in failures)
    return Condition(
        "loaded", False, f"0/{len(failures)} loaded — FAILED {shown}", failures=failures
    )


def test_a_class_of_the_training_script_is_re_saved_not_allowed() -> None:
    """It cannot be imported here, so the fleet key cannot allow it: the fix offered
    adding it to verify_safe_globals, which then fails every checkpoint (h595 #3)."""
    from rgt_tui.domain.gate_fixes import failure_kind

    assert failure_kind(SCRIPT_CLASS) == "code"
    said = fix(_loaded(("cfg.pt", SCRIPT_CLASS)), "box1", tui=False)
    assert "verify_safe_globals" not in said and "re-save it on the box" in said, said


def test_no_torch_and_a_mistyped_key_are_this_machines_to_fix() -> None:
    said = fix(_loaded(("a.pt", NO_TORCH), ("b.pt", NO_TORCH)), "box1", tui=True)
    assert said.startswith("no torch here can load it (a pull brings the same bytes): point "), said
    assert "re-pull" not in said and said.endswith("then v to verify"), said
    key = fix(_loaded(("a.pt", KEY_TYPO)), "box1", tui=False)
    assert key == (
        "correct [fleet] verify_safe_globals in the fleet file as its line says, then "
        "`rgt-tui verify box1`"
    )


def test_several_kinds_each_name_their_files() -> None:
    said = fix(
        _loaded(
            ("a.pt", NO_TORCH), ("b.json", "invalid JSON: Expecting value"), ("c.pt", NO_TORCH)
        ),
        "box1",
        tui=False,
    )
    assert said.startswith("for a.pt, c.pt: no torch here can load it"), said
    assert said.endswith("; for b.json: fix or re-pull the files named, then `rgt-tui verify box1`")
