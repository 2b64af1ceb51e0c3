"""A box's disk, on demand: what fills it (``audit``), which entries may be offered for
deletion (``offer``), and deleting them only when nothing is lost (``reclaim``)."""
