"""A group of boxes running each cell as one ``torchrun`` job (issue 41; docs/groups.md):
the backend (``backend``), each rank's host and environment (``ranks``), and the watch
that stops the other ranks when one dies (``supervise``)."""
