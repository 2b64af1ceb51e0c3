"""The launch toast: a box's runner by its pid, a Slurm host's array by its job id (s35
Slurm hour #10: the toast said "pid 9" for array job 9)."""

from __future__ import annotations

from rgt_tui.controllers.launch_plan import launched_words
from rgt_tui.services.queue.launch import LaunchResult


def test_a_box_says_its_runner_and_a_slurm_host_its_array_job() -> None:
    box = LaunchResult("box1", 4242, "tmux", "rgt-box1", 1, 3)
    assert launched_words(box) == "launched 3 cells from index 1 (tmux, session rgt-box1, pid 4242)"
    slurm = LaunchResult("hpc", 9, "slurm", "rgt-hpc", 0, 4, archived="~/.rgt/queue.archived.1")
    said = launched_words(slurm, "the acks were not recorded")
    assert said.startswith("submitted 4 cells from index 0 (array job 9, rgt-hpc)"), said
    assert "pid" not in said and "previous queue archived to ~/.rgt/queue.archived.1" in said
    assert said.endswith("\nthe acks were not recorded")
