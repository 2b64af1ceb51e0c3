"""The pane's K line under a refused host key says whose fingerprint to compare with: a
jump host's key is compared with the jump host's own, never the box provider's, as the
fix line above it and the dialog K opens say (a user's hour read the opposite there)."""

from __future__ import annotations

from rgt_tui.domain.errors import HostKeyError
from rgt_tui.widgets.host_pane import key_line


def _unknown(jump_host: str | None) -> HostKeyError:
    return HostKeyError(
        "box1", "unknown host key", "compare it", presented="ssh-ed25519 SHA256:abc",
        jump_host=jump_host,
    )  # fmt: skip


def test_a_jump_hosts_key_is_compared_with_the_jump_hosts_own_fingerprint() -> None:
    line = key_line(_unknown("bastion.example")).plain
    assert line == (
        "K trust the jump host's key? compare ssh-ed25519 SHA256:abc with "
        "bastion.example's own fingerprint first"
    )
    assert "provider" not in line


def test_a_boxs_own_key_is_compared_with_the_providers() -> None:
    assert key_line(_unknown(None)).plain.endswith("with your provider's first")
