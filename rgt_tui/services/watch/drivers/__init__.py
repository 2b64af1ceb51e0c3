"""What ``watch`` drives besides telling its sinks: the periodic pull and the autostop.

- ``periodic_pull`` — ``PullScheduler``: each host's results pulled and verified on its
  cadence (the TUI runs it too, while open);
- ``autostop`` — ``AutoStop``: a host's opt-in reversible stop, only when the gate's own
  conditions hold; ``autostop_event`` words the ``stopped`` event.

Both take the runtime's one ``HostLocks``, so neither runs on a host another job holds.
"""
