"""Scripts run as their own process by another interpreter (the standard library and torch).

Nothing here imports rgt_tui: ``verify_worker.py`` runs under ``[fleet] verify_python``,
which may be the user's training environment without rgt-tui. This folder holds nothing
else, because running a script puts its folder first on ``sys.path``, where a module named
like a standard one (``services/queue.py``) would shadow it for torch.
"""
