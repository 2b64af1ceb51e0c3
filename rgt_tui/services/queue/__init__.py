"""A host's queue: its use-cases and the schedulers that run its cells (DESIGN.md,
"Schedulers are backends"; docs/schedulers.md).

``launch``, ``append``, ``control`` (stop, kill, retry, skip), ``move`` and ``view`` are
the use-cases; ``box``/``records`` read a box's queue records; ``slurm/`` runs cells as
Slurm job arrays. ``cells``, ``check``, ``epochs``, ``launch_preflight`` and
``launch_acks`` are the parts a launch is planned from.
"""
