"""A small file rewritten at the same size while it is pulled, alone in a folder new
here (h571 #1): a running cell's state.json replaced every 50 ms. Its copy no longer
hashes, so nothing is installed and its folder is never made here; the grouped finish
then synced that folder and the whole pull failed with "[Errno 2] No such file or
directory: 'cellv'" and a fix blaming the connection. It is that one file's failure,
said by name. A real loopback box, real files."""

from __future__ import annotations

from support.pulls import box_results, fast, host_of, pull


async def test_a_small_file_rewritten_in_a_new_folder_fails_alone(make_loopback_fleet, tmp_path):
    fleet = await make_loopback_fleet(1)
    results = box_results(fleet)
    (results / "metrics.json").write_text('{"loss": 0.25}\n')
    state = results / "cellv" / "state.json"
    state.parent.mkdir()
    state.write_text("step 00000001\n")
    rewrites: list[int] = []

    def rewrite(p) -> None:  # noqa: ANN001 - the pull's progress
        # Each look of the pull's progress: the cell saves again, at the same size.
        rewrites.append(1)
        state.write_text(f"step {len(rewrites) + 1:08d}\n")

    result = await pull(
        host_of(fleet), tmp_path, options=fast(progress_interval_s=0), on_progress=rewrite
    )
    failed = dict(result.failed)
    assert "cellv/state.json" in failed, result
    assert [f.path for f in result.pulled] == ["metrics.json"], result
    assert not (tmp_path / "box1" / "cellv" / "state.json").exists()
