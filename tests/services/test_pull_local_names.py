"""Names the box may have that this machine cannot write as they are: rgt-tui's own
names (a part, a set-aside copy) are shortened to fit, and a name that cannot land here
is refused by name in the manifest while the rest of the pull finishes (ux-i 3)."""

from __future__ import annotations

from support.pulls import box_results, fast, host_of, pull, random_file, sha


async def test_a_name_that_fits_here_but_not_with_part_is_pulled(make_loopback_fleet, tmp_path):
    """254 bytes: legal here and on the box; its part (``.part`` added) would not be."""
    fleet = await make_loopback_fleet(1)
    res = box_results(fleet)
    long_name = "L" * 250 + ".txt"
    small = random_file(res / "alpha" / long_name, 10)
    large = random_file(res / "alpha" / ("B" * 251 + ".bin"), 3 << 20)  # the SFTP way
    good = random_file(res / "good.bin", 3000)
    result = await pull(host_of(fleet), tmp_path, options=fast())
    dest = tmp_path / "box1"
    assert result.ok and not result.failed and not result.conflicts
    assert sha(dest / "alpha" / long_name) == small
    assert sha(dest / "alpha" / ("B" * 251 + ".bin")) == large
    assert sha(dest / "good.bin") == good


async def test_a_long_name_replaced_on_the_box_keeps_the_earlier_copy(
    make_loopback_fleet, tmp_path
):
    """The set-aside copy's name (``.<sha12>`` added) is shortened too, and said."""
    fleet = await make_loopback_fleet(1)
    name = "R" * 250 + ".bin"
    first = random_file(box_results(fleet) / name, 3000)
    assert (await pull(host_of(fleet), tmp_path, options=fast())).ok
    random_file(box_results(fleet) / name, 3000)  # the box's copy changes
    again = await pull(host_of(fleet), tmp_path, options=fast())
    assert again.ok
    ((pulled,),) = [again.pulled]
    assert pulled.replaced is not None and pulled.replaced.startswith(".rgt/replaced/RRR")
    assert sha(tmp_path / "box1" / pulled.replaced) == first
    assert sha(tmp_path / "box1" / name) == sha(box_results(fleet) / name)
