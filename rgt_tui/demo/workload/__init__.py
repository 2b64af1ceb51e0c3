"""The demo queue's real workload: ``train.py``, a small PyTorch run copied onto each box.

Nothing here is imported by rgt-tui itself; torch is imported only by the script, on
the box, when a cell runs.
"""
