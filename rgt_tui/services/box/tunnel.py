"""A box's port (TensorBoard's 6006, or any) on this machine, over the host's one connection.

U39's third way a live panel stays empty: the service runs on the box but its port was
never brought here. ``hold_tunnel`` is ``ssh -L`` without a second login: it forwards
``127.0.0.1:N`` here (never every interface) over the connection the fleet already holds,
and keeps doing so for as long as it runs (the TUI: until the app closes or ``T`` again;
the command line: until Ctrl-C).

When the connection drops the forward dies with it (nothing listens here meanwhile: a
browser gets "connection refused", never a stale page), the state says so, and the one
reconnect loop (``connect_with_backoff``) brings the connection back, after which the
forward is opened again on the same port here, so the URL the user has open keeps working.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from rgt_tui.domain.config import HostConfig
from rgt_tui.domain.errors import TransportError
from rgt_tui.services.box.tensorboard import check_tensorboard
from rgt_tui.services.connections import connect_with_backoff
from rgt_tui.transport import Transport
from rgt_tui.transport.backoff import Backoff
from rgt_tui.transport.base import FORWARD_LISTEN_HOST, PortForward

TENSORBOARD_PORT = 6006  # TensorBoard's default --port: what the tunnel key forwards


def tunnel_url(port: int) -> str:
    """``http://127.0.0.1:N/``: where a forwarded port is opened here."""
    return f"http://{FORWARD_LISTEN_HOST}:{port}/"


@dataclass(frozen=True)
class TunnelState:
    """Where one tunnel stands: up (``url`` answers) or down and why."""

    host: str
    remote_port: int
    local_port: int | None  # the port here, once one was bound
    up: bool
    why: str = ""  # down: the reason and the next try ("connection lost; reconnecting…")
    # up, but the box's port did not answer when the tunnel opened: the box's reason
    # ("Connection refused": nothing listens there yet; or its sshd refuses forwarding).
    unanswered: str = ""

    @property
    def url(self) -> str | None:
        """The URL here while up; None while down."""
        return tunnel_url(self.local_port) if self.up and self.local_port else None

    def line(self) -> str:
        """One line for a pane, a toast or the command line (box text stays out of it:
        ``why`` comes from TransportError, whose text is cleaned where it enters)."""
        where = f"{self.host}:{self.remote_port}"
        if self.url is not None:
            if self.unanswered:
                return f"tunnel {self.url} → {where} (nothing answers there: {self.unanswered})"
            return f"tunnel {self.url} → {where}"
        return f"tunnel to {where} down: {self.why or 'not open yet'}"


class TunnelError(Exception):
    """The tunnel cannot be held at all (not a drop): ``message`` and ``fix``."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(f"{message} — {fix}")
        self.message = message
        self.fix = fix


def no_tunnel_needed(host: str, remote_port: int) -> TunnelError:
    """This machine as the host: its ports are reached directly."""
    return TunnelError(
        f"{host} is this machine: no tunnel is needed",
        f"open {tunnel_url(remote_port)} directly",
    )


async def hold_tunnel(
    transport: Transport,
    remote_port: int,
    on_state: Callable[[TunnelState], object],
    *,
    local_port: int | None = None,
    backoff: Backoff = Backoff(),
    wait: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> None:
    """Forward ``remote_port`` on the box to this machine until cancelled, telling
    ``on_state`` each change (up with its URL; down with why and the next try).

    ``local_port``: the port here; None takes the box's port number when it is free here,
    else any free one. The first forward decides the port, and every forward after a
    reconnect reuses it. TunnelError when the host is this machine or a port given here
    is taken; HostKeyError as the reconnect loop raises it; cancelling closes the forward.
    """
    host = transport.host
    if not transport.forwards_ports:
        raise no_tunnel_needed(host, remote_port)
    port = local_port
    opened = False  # the first forward decides the port; a later failure is a drop
    failed: int = 0
    failure: TransportError | None = None

    def down(why: str) -> None:
        on_state(TunnelState(host, remote_port, port, False, why))

    def retrying(attempt: int, delay: float, exc: TransportError) -> None:
        down(f"{exc.message}; reconnecting — attempt {attempt}, next try in {delay:.0f} s")

    while True:
        failed = await connect_with_backoff(
            transport, backoff, retrying, wait, failed=failed, failure=failure
        )
        try:
            forward = await _open(transport, remote_port, port)
        except TransportError as exc:  # dropped between the connect and the forward
            failed, failure = failed + 1, exc
            continue
        except OSError as exc:  # the port here is taken
            if not opened:
                raise TunnelError(
                    f"cannot listen on {FORWARD_LISTEN_HOST}:{port} here: "
                    f"{(exc.strerror or str(exc)).lower()}",
                    "pick another port with --local-port N (0: any free port)",
                ) from exc
            # Taken while the tunnel was down (another program got it): keep the URL the
            # user has open, and try again on the reconnect schedule.
            failed = failed + 1
            failure = TransportError(host, f"{tunnel_url(port or 0)} is taken by another program")
            continue
        opened = True
        port = forward.local_port
        failed, failure = 0, None
        try:
            unanswered = await forward.probe() or ""
            on_state(TunnelState(host, remote_port, port, True, unanswered=unanswered))
            await forward.wait_closed()
        finally:
            forward.close()
        failed, failure = 1, TransportError(host, "connection lost")
        down("connection lost; reconnecting")


async def _open(transport: Transport, remote_port: int, port: int | None) -> PortForward:
    """The forward on ``port`` (None: the box's port number if free here, else any)."""
    if port is not None:
        return await transport.forward_port(remote_port, local_port=port)
    try:
        return await transport.forward_port(remote_port, local_port=remote_port)
    except OSError:  # taken here (a TensorBoard of this machine's own, say): any port
        return await transport.forward_port(remote_port, local_port=0)


async def tunnel_with_check(
    host: HostConfig,
    transport: Transport,
    remote_port: int,
    on_state: Callable[[TunnelState], object],
    on_advice: Callable[[str], object],
    *,
    check: bool = True,
    local_port: int | None = None,
    backoff: Backoff = Backoff(),
    wait: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> None:
    """``hold_tunnel`` (both the TUI's ``T`` and `rgt-tui tunnel` run this), and once it
    is first up, U39's path half: the TensorBoard advice (if any) to ``on_advice``."""
    opened = asyncio.Event()

    def told(state: TunnelState) -> None:
        if state.up:
            opened.set()
        on_state(state)

    holding = asyncio.ensure_future(
        hold_tunnel(transport, remote_port, told, local_port=local_port, backoff=backoff, wait=wait)
    )
    waiting = asyncio.ensure_future(opened.wait())
    try:
        await asyncio.wait({holding, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if opened.is_set() and check:
            try:
                advice = await check_tensorboard(host, transport, remote_port)
            except TransportError:
                advice = None  # the connection dropped: the tunnel's own state says so
            if advice:
                on_advice(advice)
        await holding
    finally:
        waiting.cancel()
        holding.cancel()
        with contextlib.suppress(BaseException):
            await holding
