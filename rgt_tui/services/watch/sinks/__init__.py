"""Where ``watch`` tells what it saw: notifications (``notify``: Apprise, one message per
event key) and Prometheus metrics (``metrics``)."""
