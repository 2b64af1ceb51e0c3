"""The demo's code tree: what `sync` (key `y`) pushes to the demo boxes.

A researcher's fleet shares one repository: the training script and its configs. The demo
gathers what the workload put on each box (``train.py``, ``configs/*.json``) into
``<base_dir>/code``, gives every box the whole tree (so a cell moved to another box finds
its config there), and names it as the fleet's ``code``. The boxes start in sync with it,
so preflight's ``code`` check passes and ``y`` reports "already in sync" until the user
edits ``<base_dir>/code/train.py`` — then ``y`` sends just that file, checked by hash.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from rgt_tui.demo.loopback.fleet import LoopbackFleet, toml_str
from rgt_tui.services.code_sync.box_tree import RECORD_NAME, record_text
from rgt_tui.services.code_sync.listing import list_tree

# What the runs write into the workdir (their outputs, under durable_dir) is not code; nor
# is what a shell leaves there, since a demo box's home is its workdir (a user's hour: `s`
# left .bash_history, and the next launch was refused for a box that "differs").
GITIGNORE = (
    "# Written on the boxes, not code: never sent by sync.\n"
    "results/\n.bash_history\n.python_history\n.lesshst\n.viminfo\n.cache/\n.config/\n.local/\n"
)


def share_code_tree(loopback: LoopbackFleet) -> Path:
    """Gather the boxes' workload files into ``<base_dir>/code``, copy the whole tree to
    every box, and put ``code`` in the fleet file's ``[fleet]`` table; returns the tree.
    Call after the workload (and any box's own cells) are installed."""
    assert loopback.base_dir is not None, "call after the fleet is started"
    tree = loopback.base_dir / "code"
    (tree / "configs").mkdir(parents=True, exist_ok=True)
    for box in loopback.boxes:
        shutil.copyfile(box.root / "train.py", tree / "train.py")
        for config in sorted((box.root / "configs").glob("*.json")):
            shutil.copyfile(config, tree / "configs" / config.name)
    (tree / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
    # Each box's sync record names the files it got, as after a sync: the first `y` after
    # an edit replaced a config "not put there by a sync" and kept the box's copy aside
    # (a user's hour, s20c #12).
    listed = list_tree(tree, (), "demo")
    record = "".join(f"{line}\n" for line in record_text(f.file_hash() for f in listed.files))
    for box in loopback.boxes:
        shutil.copytree(tree, box.root, dirs_exist_ok=True)
        (box.root / RECORD_NAME).write_text(record, encoding="utf-8")
    hosts = loopback.hosts_file.read_text(encoding="utf-8")
    loopback.hosts_file.write_text(
        "# The demo's code tree: `rgt-tui sync HOST` (key y) pushes it to the box.\n"
        f"[fleet]\ncode = {toml_str(str(tree))}\n\n" + hosts,
        encoding="utf-8",
    )
    return tree
