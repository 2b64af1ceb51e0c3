"""`rgt-tui tunnel HOST [PORT] [--local-port N]` (a row of table.py): the ``T`` key's twin.

Forwards the box's PORT (TensorBoard's 6006 by default) to ``http://127.0.0.1:N/`` here
over the host's connection (``services.box.tunnel``: no second login, loopback only), prints
the URL on stdout, then says once whether the box's TensorBoard reads where the runs
write events (U39). Runs until Ctrl-C; a dropped connection is said on stderr and the
tunnel comes back on the same URL when the connection does.

Exit codes: 0 ended by Ctrl-C (how it ends); 1 unreachable, a port here taken, or the
host is this machine (no tunnel needed; the URL to open instead); 2 bad input.
"""

from __future__ import annotations

import argparse

from rich.text import Text

from rgt_tui.cli.exit_codes import EXIT_OK
from rgt_tui.cli.runner import Call, console
from rgt_tui.services.box.tunnel import (
    TENSORBOARD_PORT,
    TunnelError,
    TunnelState,
    tunnel_with_check,
)
from rgt_tui.services.connect import Transport


def _port(text: str, lowest: int = 0) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not lowest <= value <= 65535:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r} ({lowest}-65535)")
    return value


def _box_port(text: str) -> int:
    """The box's port: 0 is "any" only here, where this side listens (hour s45b #4:
    `tunnel HOST 0` said "cannot listen on 127.0.0.1:None")."""
    return _port(text, 1)


def add_tunnel_arguments(parser: argparse.ArgumentParser) -> None:
    """PORT, ``--local-port`` and ``--no-check``."""
    parser.add_argument(
        "port",
        metavar="PORT",
        nargs="?",
        type=_box_port,
        default=TENSORBOARD_PORT,
        help=f"the port on the box (default {TENSORBOARD_PORT}, TensorBoard's)",
    )
    parser.add_argument(
        "--local-port",
        metavar="N",
        type=_port,
        default=None,
        help="the port here, on 127.0.0.1 (default: PORT when free here, else any; 0: any)",
    )
    parser.add_argument(
        "--no-check",
        action="store_true",
        help="skip the check of the box's TensorBoard logdir",
    )


def tunnel_interrupted(call: Call) -> int:
    """Ctrl-C is how a tunnel ends: 0."""
    return EXIT_OK


async def run_tunnel(call: Call, transport: Transport) -> int:
    """Hold the tunnel until Ctrl-C; 1 when it cannot be held at all."""
    args = call.args
    out = console()

    def on_state(state: TunnelState) -> None:
        if state.up:
            out.print(f"{state.line()}  (Ctrl-C ends it)")
        else:
            call.err.print(Text.assemble(("rgt-tui tunnel: ", "bold yellow"), state.line()))

    def on_advice(advice: str) -> None:
        call.err.print(Text.assemble(("note: ", "bold yellow"), advice))

    await transport.connect()  # unreachable now: exit 1 at once, not a retry loop
    try:
        await tunnel_with_check(
            call.host,
            transport,
            args.port,
            on_state,
            on_advice,
            check=not args.no_check,
            local_port=args.local_port,
        )
    except TunnelError as exc:
        return call.fail(exc.message, fix=exc.fix)
    return EXIT_OK  # not reached: the tunnel runs until cancelled
