"""How a launch plan's warnings name many cells (hour s17b #13b: "cells 0, 1, 2, … 3"
where "…" stood for nothing)."""

from __future__ import annotations

from rgt_tui.domain.queue_state import cell_span


def test_cells_are_named_in_full_up_to_four_and_as_a_range_or_a_cut_beyond() -> None:
    assert cell_span([3], "is", "are") == "cell 3 is"
    assert cell_span([0, 1, 2, 3], "is", "are") == "cells 0, 1, 2, 3 are"
    assert cell_span(list(range(10)), "is", "are") == "cells 0–9 (10 in all) are"
    assert cell_span([0, 2, 5, 6, 7, 9], "is", "are") == "cells 0, 2, 5, … 9 (6 in all) are"
