"""A box's names that differ only by case, pulled to a disk that folds case (macOS's
default, exFAT, Windows): one file here for two on the box. The first in sorted order is
pulled and the other refused by name with its fix, so no result is written over another,
the pull settles (the next one has nothing to do) and verify names what is missing: the
gate stays locked until the box's names are told apart.

Real components: a loopback box and a real exFAT disk (``support.case_disk``)."""

from __future__ import annotations

import os

from support.case_disk import case_folding_disk
from support.pulls import box_results, fast, host_of, pull, random_file, sha

from rgt_tui.domain.manifest_refusals import refusal_fix
from rgt_tui.services.pull.local_tree import HostTree
from rgt_tui.services.verify.run import verify_host


async def test_case_twins_on_a_case_folding_disk_are_refused_by_name(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    upper = random_file(res / "Model.pt", 3000)
    random_file(res / "model.pt", 4000)
    random_file(res / "ckpt", 10)  # a file, and a folder of the same folded name
    random_file(res / "CKPT" / "last.bin", 10)
    x = random_file(res / "runs" / "x.bin", 100)  # two folders of one folded name: merged
    y = random_file(res / "Runs" / "y.bin", 100)
    with case_folding_disk(tmp_path) as disk:
        results = disk / "results"
        first = await pull(host_of(fleet), results, options=fast())
        refused = {r.path: r.reason for r in first.manifest.refused}
        assert set(refused) == {"model.pt", "ckpt"}, refused
        assert refused["model.pt"].startswith("differs only by case from Model.pt")
        assert refused["ckpt"].startswith("differs only by case from CKPT/last.bin")
        assert "rename one of them on the box" in refusal_fix(refused["model.pt"])
        assert not first.ok and not first.failed and not first.conflicts
        dest = results / "box1"
        assert sha(dest / "Model.pt") == upper  # not written over by model.pt
        assert (sha(dest / "runs" / "x.bin"), sha(dest / "Runs" / "y.bin")) == (x, y)

        again = await pull(host_of(fleet), results, options=fast())
        assert not again.pulled and not again.failed  # settled: nothing to do
        assert {r.path for r in again.manifest.refused} == {"model.pt", "ckpt"}

        report = await verify_host(host_of(fleet), results, roster=())
        assert not report.ok
        assert any("model.pt" in p for p in report.problems), report.problems


def test_only_a_disk_that_folds_case_is_taken_for_one(tmp_path):
    """The probe: this machine's own disk tells case apart; the exFAT one does not."""
    here = HostTree(tmp_path / "here")
    assert not here.folds_case and not any((tmp_path / "here").iterdir())  # probe removed
    here.close()
    with case_folding_disk(tmp_path) as disk:
        there = HostTree(disk / "there")
        assert there.folds_case and not any((disk / "there").iterdir())
        there.close()


async def test_the_twin_already_pulled_is_the_one_kept(make_loopback_fleet, tmp_path):
    """Review s35: model.pt pulled and verified, then the box also has Model.pt. Sorted
    order kept Model.pt, whose plan met the local model.pt as "a different local file is in
    the way" and refused model.pt: the one already here is kept, the new twin refused."""
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    lower = random_file(res / "model.pt", 3000)
    with case_folding_disk(tmp_path) as disk:
        results = disk / "results"
        first = await pull(host_of(fleet), results, options=fast())
        assert first.ok and not first.manifest.refused
        random_file(res / "Model.pt", 4000)
        again = await pull(host_of(fleet), results, options=fast())
        refused = {r.path: r.reason for r in again.manifest.refused}
        assert set(refused) == {"Model.pt"}, refused
        assert refused["Model.pt"].startswith("differs only by case from model.pt")
        assert not again.conflicts and not again.failed, again.conflicts
        assert sorted(os.listdir(results / "box1")) == [".rgt", "model.pt"]
        assert sha(results / "box1" / "model.pt") == lower


def test_two_threads_asking_which_twins_are_here_each_read_the_whole_folder(tmp_path):
    """The early listing and the manifest ask which case twins are already here from two
    threads at once. Both listed the host's folder through dups of one descriptor, which
    share a read position: a loaded run saw a half listing and kept the new twin over
    the verified one (the test above, 1 run in 3 under load)."""
    from concurrent.futures import ThreadPoolExecutor

    # (The method ``writable`` calls on a disk that folds case, asked directly: this
    # machine's own disk does not fold case, and the race needs no exFAT to show.)
    root = tmp_path / "box1"
    root.mkdir()
    names = [f"checkpoint-{i:05d}-with-a-long-enough-name.pt" for i in range(1500)]
    for name in names:
        (root / name).touch()
    asked = names[::75]  # 20 names spread over the listing
    tree = HostTree(root)
    try:
        with ThreadPoolExecutor(2) as pool:
            found = list(pool.map(lambda _: tree._names_here(asked), range(40)))
    finally:
        tree.close()
    assert all(f == set(asked) for f in found), [len(f) for f in found]
