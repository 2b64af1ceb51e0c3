"""A large file's SFTP session keeps two segments out (``copy.SEGMENTS_OUT``), so it never
idles a round trip between one segment's last answer and the next segment's first
request; the part still grows in order and its hash is the box's (issue 44)."""

from __future__ import annotations

from support.pulls import Counted, box_results, fast, host_of, random_file, sha

from rgt_tui.services.pull import pull_host
from rgt_tui.services.pull.copy import LOOK_AHEAD, SEGMENT, SEGMENTS_OUT
from rgt_tui.transport import transport_for

MIB = 1 << 20


class _Watched(Counted):
    """The real transport; each reader says which of its segments are being fetched."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        super().__init__(inner)
        self.most_out = 0  # the most segments one reader had out at once
        self.starts: list[int] = []  # each segment's offset, as it was asked for

    async def open_reader(self, path: str, **kw: object):  # type: ignore[no-untyped-def]
        return _WatchedReader(await self.inner.open_reader(path, **kw), self)


class _WatchedReader:
    def __init__(self, inner, watch: _Watched) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.watch, self.out = inner, watch, 0

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.inner, name)

    async def blocks(self, offset: int, length: int):  # type: ignore[no-untyped-def]
        self.out += 1
        self.watch.starts.append(offset)
        self.watch.most_out = max(self.watch.most_out, self.out)
        try:
            async for piece in self.inner.blocks(offset, length):
                yield piece
        finally:
            self.out -= 1


async def test_one_session_keeps_two_segments_out_and_the_file_lands_whole(
    make_loopback_fleet, tmp_path
):
    fleet = await make_loopback_fleet(1)
    size = 6 * SEGMENT + 12345  # a short last segment too
    digest = random_file(box_results(fleet) / "ckpt" / "big.pt", size)
    host = host_of(fleet)
    box = _Watched(transport_for(host))
    try:
        result = await pull_host(
            host,
            tmp_path,
            box,
            options=fast(lanes_per_file=1),  # type: ignore[arg-type]
        )
    finally:
        await box.inner.close()
    assert result.ok, result
    assert sha(tmp_path / "box1" / "ckpt" / "big.pt") == digest
    assert not list((tmp_path / "box1" / ".rgt" / "parts").rglob("*.part"))
    # Every segment asked for once, in the file's order, each the segment's size.
    assert box.starts == list(range(0, size, SEGMENT))
    # The next segment was asked for while the one before it still had answers to come.
    assert box.most_out == SEGMENTS_OUT == 2
    assert LOOK_AHEAD >= SEGMENTS_OUT * SEGMENT  # else the look-ahead would hold one back
