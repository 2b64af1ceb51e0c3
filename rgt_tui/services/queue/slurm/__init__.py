"""A host that is a Slurm cluster's login node (issue 32): its queue is a job array.

``launch``: the launch plan and the ``sbatch`` submission (``sbatch`` holds the pure
parts: the command line, the array, the node-local refusal); ``control``: stop, kill and
retry as scheduler commands; ``view``: the scheduler's view of each cell; ``telemetry``:
the GPUs of the nodes running the cells.
"""
