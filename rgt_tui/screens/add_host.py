"""AddHostScreen: paste a box's SSH command, check its host key, add it to the fleet file.

The same steps as ``rgt-tui add`` (rgt_tui.services.fleet.add_host): the target is read by
the fleet file's own parser, the name and profile are offered from the host (until the
user types their own), "Check host key" connects once and shows the key. An unknown key
needs the "Trust this key" button or ``t``, never the focused one (Enter or Escape
leaves known_hosts alone; the line under the buttons says what Enter does where the
focus is: in the SSH command field it checks, in every other field it moves on, as
Tab does, the last field's to the buttons); a changed or revoked key is shown with its
fix and nothing can be added. "Add" appends the block and dismisses with the new
``HostConfig``; Cancel or Escape dismisses with None and adds nothing. A key trusted
here is written to known_hosts at once (as K on a host's pane writes it), so from then
on Cancel and Escape say it stays there, and where, instead of "nothing written". A
pasted account another entry already logs in to is said with the check, naming that
entry; Add still adds it (status reads both; a launch of either is refused). What a
first launch needs (workdir, code, queue, run, durable_dir, pull) is
``LaunchKeysForm``'s, prefilled with the profile's defaults; a check or a trust that
ends while the user types in a field never moves the focus to a button (a typed Enter
or ``t`` must not add or trust).

Over 450 lines on purpose: one screen whose focus rules (what Enter does in each field,
where the focus goes after a check or a trust) are read against each other; its steps
are ``services.fleet.add_host``'s and its launch fields ``add_host_keys``'.

The fields and the check's lines scroll in a ``DialogBody`` between the title and the
buttons, so the title, the buttons and the key line stay on screen at 80x24 too; its
fit and its keys (↑↓, PgUp/PgDn) are ``ReplanScreen``'s, as for the disk audit (the add
screen never holds Enter: ``begin_replan`` is not called). The check's lines sit under
the SSH command they are about, and each is scrolled into view as it is said (the
focused field first where both do not fit).

Past 500 lines on purpose: one screen, one flow (paste, check the key, trust it,
add), whose handlers all read the same state (the checked key, the busy step); the
parsing, the key check and the fleet-file write are already in ``services.fleet.add_host``.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Input, Select, Static

from rgt_tui.controllers.workers import run_work
from rgt_tui.domain.config import FLEET_FILE_NAME, HostConfig
from rgt_tui.domain.profiles import DEFAULT_PROFILE
from rgt_tui.profiles import load_profiles
from rgt_tui.screens.add_host_keys import LaunchKeysForm, field_id
from rgt_tui.screens.dialog import DialogBody, DialogButton, KeyHint, ReplanScreen, enter_does
from rgt_tui.screens.type_ahead import CommandInput, InOrderInput
from rgt_tui.services.fleet.add_host import (
    AddRefused,
    FleetFile,
    KeyCheck,
    NewHost,
    Pasted,
    add_to_fleet,
    check_host_key,
    check_name,
    check_profile,
    fleet_in_code,
    fleet_known_hosts,
    guess_profile,
    read_cost,
    read_fleet_file,
    read_target,
    same_account,
    suggest_name,
    trust_key,
)
from rgt_tui.services.fleet.add_keys import (
    LAUNCH_KEYS,
    code_offer,
    create_missing_queue,
    launch_defaults,
    read_launch_keys,
)

MUTED = "$foreground-muted"
FIELD_INPUT = {"target": "#add-target", "name": "#add-name", "cost": "#add-cost"}
FIELD_INPUT.update({key: f"#{field_id(key)}" for key in LAUNCH_KEYS})
Values = tuple[str, str, str, str, dict[str, str]]  # target, name, profile, cost, launch keys
# What Enter does in each field but the SSH command's (which checks): it moves on, as Tab
# does (``_next_field``), never checks or adds; after the last field come the buttons.
_FIELDS_IN_ORDER = ["add-name", "add-cost", *(field_id(key) for key in LAUNCH_KEYS)]
ENTER_MOVES_ON = {ident: "next field" for ident in _FIELDS_IN_ORDER[:-1]}
ENTER_MOVES_ON[_FIELDS_IN_ORDER[-1]] = "to the buttons"
ENTER_DOES = {"add-target": "check the host key", "add-profile": "choose the profile"}
ENTER_DOES.update(ENTER_MOVES_ON)


def _behind_unknown_jump(check: KeyCheck) -> bool:
    """The key shown is the ProxyJump's, unknown: the box is added anyway (h604 #2: Add
    anyway did nothing), and K on its pane trusts the jump host's key by its typed name."""
    return check.status == "unknown" and check.error is not None and bool(check.error.jump_host)


def _row(label: str, value: str, style: str = "") -> Content:
    return Content.assemble((f"{label:<13}", MUTED), (value, style))


def _row_if(label: str, value: str | None) -> list[Content]:
    """The row, or none at all when there is nothing to say (never a bare heading)."""
    return [_row(label, value)] if value else []


class AddHostScreen(ReplanScreen[HostConfig | None]):
    """Add one box to the fleet file; dismisses with its HostConfig, or None."""

    DEFAULT_CSS = """
    AddHostScreen > #add-box { width: 104; }
    AddHostScreen #add-fields { height: auto; margin: 1 0 0 0; }
    AddHostScreen #add-name { width: 1fr; }
    /* Room for "generic-ssh — Bare SSH box" at 80 columns; a longer one is cut, never
       wrapped onto a second line. */
    AddHostScreen #add-profile { width: 36; }
    AddHostScreen #add-profile #label { text-wrap: nowrap; text-overflow: ellipsis; }
    AddHostScreen #add-cost { width: 16; }
    AddHostScreen #add-status { height: auto; }
    """

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", tooltip="Close without adding the box"),
    ]

    class Checked(Message):
        """The host-key check finished (``check``), or the form was refused (``refused``);
        ``same_account``: what to say of other entries of the pasted account."""

        def __init__(
            self,
            new: NewHost | None,
            check: KeyCheck | None,
            refused: AddRefused | None,
            same_account: str | None = None,
        ) -> None:
            super().__init__()
            self.new = new
            self.check = check
            self.refused = refused
            self.same_account = same_account

    class Trusted(Message):
        """The unknown key was written to ``path``, or could not be (``error``)."""

        def __init__(self, path: Path | None, error: str = "") -> None:
            super().__init__()
            self.path = path
            self.error = error

    class Added(Message):
        """The block was appended (``host``), or refused (``refused``)."""

        def __init__(
            self,
            host: HostConfig | None,
            refused: AddRefused | None,
            note: str = "",
            warning: str = "",
        ) -> None:
            super().__init__()
            self.host = host
            self.refused = refused
            self.note = note  # the queue file created for it, or why it could not be
            self.warning = warning  # the fleet file lies in the code tree, seen by git

    def __init__(
        self, fleet_file: Path | None, *, cwd: Path | None = None, fleet_code: Path | None = None
    ) -> None:
        """``fleet_file``: the fleet's file (``Fleet.path``); None when the app runs with
        none, and then ``./hosts.toml`` is created. ``fleet_code``: its ``[fleet] code``,
        which a new host takes unless a code is typed (nothing else is offered)."""
        super().__init__()
        self.fleet_file = fleet_file or (cwd or Path.cwd()) / FLEET_FILE_NAME
        # Once, not at every keystroke of the name (it walks up to the git tree).
        self._code_offer = code_offer(cwd or Path.cwd(), fleet_code)
        self.pasted: Pasted | None = None
        self.new: NewHost | None = None  # what the last check was for
        self.check: KeyCheck | None = None
        self._suggested_name = ""
        self._guessed_profile = DEFAULT_PROFILE
        self._busy = False
        self._check_from: object = None  # what had the focus when the check was asked for
        self._trusted_in: Path | None = None  # known_hosts, once a key was trusted here
        self._same_account: str | None = None  # said under the check's lines while it holds
        self.added_note = ""  # what the add made besides the entry ("created queues/…")

    def compose(self) -> ComposeResult:
        options = [(f"{p.name} — {p.title}", p.name) for p in load_profiles().values()]
        with Vertical(id="add-box", classes="dialog-box"):
            yield Static(
                Content.assemble(("Add a box to ", "bold"), (str(self.fleet_file), "bold $accent")),
                id="add-title",
            )
            with DialogBody(id="add-body"):
                # Whole at 80 columns (the field's room there: 68).
                # No select-on-focus here or below: Tab back to a pasted command and one
                # key replaced it whole (hour s19b #11), as the launch fields never did.
                target = CommandInput(
                    placeholder="ssh -p 22034 root@ssh4.vast.ai  or  root@host:port",
                    id="add-target",
                    select_on_focus=False,
                )
                target.border_title = "SSH command"
                yield target
                yield Static(
                    Content.styled(
                        "Paste the provider's SSH command, then check the box's host key.", MUTED
                    ),
                    id="add-status",
                )
                with Horizontal(id="add-fields"):
                    name = InOrderInput(
                        placeholder="from host", id="add-name", select_on_focus=False
                    )
                    name.border_title = "name"
                    yield name
                    yield Select(
                        options,
                        value=DEFAULT_PROFILE,
                        allow_blank=False,
                        id="add-profile",
                        tooltip="platform profile: its teardown verb, what keeps billing",
                    )
                    cost = InOrderInput(
                        placeholder="e.g. 1.29", id="add-cost", select_on_focus=False
                    )
                    cost.border_title = "$ per hour"
                    yield cost
                yield LaunchKeysForm(id="add-launch")
            with Horizontal(id="add-buttons", classes="dialog-buttons"):
                yield DialogButton(
                    "Check host key", does="check the host key", id="add-check", variant="primary"
                )
                yield DialogButton(
                    "Trust this key", does="trust this key", id="add-trust", variant="warning"
                )
                yield DialogButton(
                    "Add", does="add the box", id="add-add", variant="success", disabled=True
                )
                yield DialogButton("Cancel", does="cancel, nothing written", id="add-cancel")
            yield KeyHint(id="add-hint")

    def on_mount(self) -> None:
        self.query_one("#add-trust", Button).display = False
        self.watch(
            self.query_one("#add-profile", Select),
            "expanded",
            self._profile_list_closed,
            init=False,
        )
        self.set_focus(self.query_one("#add-target", Input))
        self._offer_launch_keys()
        self.show_hint()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        name = event.widget
        if isinstance(name, Input) and name.id == "add-name" and name.value == self._suggested_name:
            # The name made from the host, not typed: a name typed now replaces it (it read
            # as a placeholder, and "gpu4" typed became "127-0-0-1-2222gpu4": hour s45a
            # #11). One the user typed is kept.
            name.select_all()
        self.show_hint()

    def _trustable(self) -> bool:
        """Whether the check found a box's own unknown key that may be trusted here."""
        check = self.check
        return (
            check is not None
            and check.can_trust
            and self.query_one("#add-trust", Button).display
            and not self._busy
        )

    def show_hint(self) -> None:
        """Say what Enter does where the focus is, and the other keys (the scroll keys
        while the fields hold more than they show); then fit the fields to the room left."""
        # No one-letter key trusts here (the host-key prompt's ``t``): a form takes
        # typing, and a name typed with Cancel focused trusted the key with its first
        # letter (s43 hour; s22 saw it one Tab past the profile chooser). The Trust
        # button does, focused and Entered or clicked.
        hint = self.query_one("#add-hint", KeyHint)
        if self.query_one("#add-profile", Select).expanded:
            # The list is open: its keys, not the form's (h585 #4: "Esc: cancel, nothing
            # written" while Esc only closed the list).
            hint.show_keys(
                "choose it, then the next field", ("↑↓", "a profile"), ("Esc", "close the list")
            )
        else:
            enter = enter_does(self.focused, ENTER_DOES)
            hint.show_keys(
                enter, ("Tab", "next"), *self.scroll_keys(), ("Esc", self._cancel_does())
            )
        self.call_after_refresh(self.fit_body)

    def _cancel_does(self) -> str:
        """What Cancel and Escape leave behind: nothing, or the key trusted here (it is
        written when trusted, and a cancel does not take it back)."""
        if self._trusted_in is None:
            return "cancel, nothing written"
        return f"cancel; the key stays trusted in {self._trusted_in}"

    # -- the form ------------------------------------------------------------------------

    def _status(self, *lines: Content) -> None:
        if self._same_account:  # under every line of this check: trusted, refused, …
            lines = (
                *lines,
                Content.styled(f"{self._same_account}. Add still adds it.", "$warning"),
            )
        self.query_one("#add-status", Static).update(Content("\n").join(lines))
        self.call_after_refresh(self._show_status)

    def _show_status(self) -> None:
        """Scroll the check's lines to the top of the fields, then the focused field into
        view (the cursor the user types at wins where both do not fit)."""
        body = self.query_one(DialogBody)
        # Their top, not "into view": their new height may not be laid out yet, their
        # place under the SSH command is.
        status = self.query_one("#add-status")
        body.scroll_to_widget(status, top=True, animate=False, immediate=True)
        focused = self.focused
        if focused is not None and body in focused.ancestors:
            body.scroll_to_widget(focused, animate=False, immediate=True)

    def _refused(self, refused: AddRefused) -> None:
        lines = [Content.styled(refused.message, "$error")]
        if refused.fix:
            lines.append(_row("fix", refused.fix))
        self._status(*lines)
        selector = FIELD_INPUT.get(refused.field)
        if selector is not None:
            self.query_one(selector, Input).focus()

    @on(Input.Changed, "#add-target")
    def _target_changed(self, event: Input.Changed) -> None:
        checked = self.check is not None or self.new is not None
        self._forget_check()
        if checked:  # its words were for the command as it was (a user's hour read
            # "trust this key? root@127.0.0.1:39371" under another command)
            self._status(
                Content.styled("the SSH command changed: Enter checks its host key", MUTED)
            )
        try:
            self.pasted = read_target(event.value)
        except AddRefused:
            self.pasted = None  # said when checked: half-typed text is not an error yet
            return
        name = self.query_one("#add-name", Input)
        if name.value in ("", self._suggested_name):  # not typed by the user: follow
            self._suggested_name = suggest_name(self.pasted.target)
            name.value = self._suggested_name
            # The cursor at its end, as every field keeps it: a command typed (or sent) key
            # by key left it where the first suggestion ended ("1" of "127-0-0-1-44195"),
            # and the name typed next went into the middle ("1box2b27-0-0-1-44195").
            name.cursor_position = len(name.value)
        select: Select[str] = self.query_one("#add-profile", Select)
        if select.value == self._guessed_profile:
            self._guessed_profile = guess_profile(self.pasted.target)
            select.value = self._guessed_profile

    @on(Input.Changed, "#add-name")
    @on(Select.Changed, "#add-profile")
    def _offer_launch_keys(self) -> None:
        """The profile's defaults (and the name's queue file) into the launch fields the
        user has not typed into."""
        profile = str(self.query_one("#add-profile", Select).value)
        name = self.query_one("#add-name", Input).value.strip() or "NAME"
        try:
            defaults = launch_defaults(profile, name, self._code_offer)
        except KeyError:  # not a profile (a blank Select): nothing to offer
            return
        self.query_one(LaunchKeysForm).offer(defaults)

    def _profile_list_closed(self, expanded: bool) -> None:
        """The profile list closed with the keys still in it: Enter on a profile (the
        one already chosen too) moves on to the next field, as Enter does in the others.
        Moving only on a changed value (Select.Changed) left Enter on the guessed profile
        opening the list again and again (h581 #2). On the app's queue, where the select
        asks for the focus back: after it when Enter chose (its focus() comes first),
        before it when Escape closed the list, so Escape leaves the cursor on the select."""
        select = self.query_one("#add-profile", Select)
        self.show_hint()  # the list's keys, or the form's again
        if not expanded and select.has_focus_within:
            self.app.call_later(self.focus_next)

    @on(Input.Submitted)
    def _next_field(self, event: Input.Submitted) -> None:
        """Enter in a field but the SSH command's: on to the next, as Tab (ENTER_MOVES_ON)."""
        if event.input.id in ENTER_MOVES_ON:
            event.stop()
            self.focus_next()

    @on(Input.Submitted, "#add-target")
    @on(Button.Pressed, "#add-check")
    def _check_pressed(self, event: Message) -> None:
        event.stop()
        if self._busy:
            return
        self._forget_check()
        self._set_busy(True)
        self._check_from = self.focused
        self._status(Content.styled("checking the host key…", "$accent"))
        run_work(self, self._check(self._values()), "add-host:check", group="add-host")

    def _values(self) -> Values:
        select: Select[str] = self.query_one("#add-profile", Select)
        return (
            self.query_one("#add-target", Input).value,
            self.query_one("#add-name", Input).value,
            str(select.value),
            self.query_one("#add-cost", Input).value,
            self.query_one(LaunchKeysForm).values(),
        )

    async def _new_host(self, values: Values) -> tuple[NewHost, FleetFile]:
        """The form's values, checked against the fleet file as it is now (returned too)."""
        target, name, profile, cost, launch = values
        pasted = read_target(target)
        fleet_file = await asyncio.to_thread(read_fleet_file, self.fleet_file)
        # In the CLI's order: a taken name was refused as its queue file's (the queue
        # field's default follows the name), then as the name (h581 #3).
        checked = check_name(name or suggest_name(pasted.target, fleet_file.names), fleet_file)
        profile, per_hour = check_profile(profile), read_cost(cost)
        keys = await asyncio.to_thread(read_launch_keys, launch, self.fleet_file, fleet_file.fleet)
        new = NewHost(
            name=checked,
            target=pasted.target,
            profile=profile,
            cost_per_hour=per_hour,
            identity_file=pasted.identity_file,
            known_hosts=fleet_known_hosts(fleet_file),
            pasted=pasted.text,
            keys=keys,
        )
        return new, fleet_file

    async def _check(self, values: Values) -> None:
        try:
            new, fleet_file = await self._new_host(values)
        except AddRefused as exc:
            self.post_message(self.Checked(None, None, exc))
            return
        # In a thread: it reads ~/.ssh/config for every entry (a Match exec runs a shell).
        shared = await asyncio.to_thread(same_account, new.target, fleet_file)
        self.post_message(self.Checked(new, await check_host_key(new), None, shared))

    @on(Checked)
    def _checked(self, message: Checked) -> None:
        self._set_busy(False)
        if message.refused is not None or message.check is None:
            self._refused(message.refused or AddRefused("the check did not run"))
            return
        if message.new is None or message.new.pasted != self._values()[0].strip():
            return  # the target was edited while it was checked: that check is void
        self.new, check = message.new, message.check
        self.check = check
        self._same_account = message.same_account
        add = self.query_one("#add-add", DialogButton)
        trust = self.query_one("#add-trust", Button)
        if check.status in ("trusted", "local"):
            self._status(
                Content.styled(check.message, "$success"),
                _row("host", check.host, "bold"),
            )
            add.disabled = False
            target = self.query_one("#add-target", Input)
            if self._check_from is target and self.focused in (None, target):
                # Checked by Enter right after the paste: on to the name, not to Add — a
                # second Enter added the box with a name, run template and folders never
                # seen (s43 hour). Enter walks the fields from there; Tab reaches Add.
                self.set_focus(self.query_one("#add-name", Input))
            else:
                self._focus_add_or_cancel(add)
        elif _behind_unknown_jump(check):
            # A jump host's key is never trusted with one click (shared, long-lived): K on
            # the host's pane asks for its name typed (screens/host_key.py).
            jump = check.error.jump_host
            self._status(
                Content.assemble(
                    ("unknown key of the JUMP HOST ", "bold $warning"), (jump, "bold")
                ),
                Content.styled(
                    f"{jump} is the ProxyJump that {check.host} is reached through. Compare "
                    f"the fingerprint with {jump}'s own (not the provider's for the box): add "
                    "the host, then K on its pane trusts the key once you type the jump host's "
                    "name.",
                    MUTED,
                ),
                _row("fingerprint", check.fingerprint or "", "bold"),
                *_row_if("fix", check.fix),
            )
            self._add_anyway(add)
        elif check.status == "unknown":
            self._status(
                Content.assemble(("trust this key? ", "bold $warning"), (check.host, "bold")),
                Content.styled(
                    "The box showed a host key no known_hosts file has. Trust it only if this "
                    "fingerprint is the one your provider shows for the box.",
                    MUTED,
                ),
                _row("fingerprint", check.fingerprint or "", "bold"),
                _row("file", str(check.known_hosts_file)),
                Content.styled("Trust appends this line to the file:", MUTED),
                Content(check.trust_line or ""),  # a row of its own: copied whole
            )
            trust.display = True
            self._focus_unless_typing(self.query_one("#add-cancel", Button))  # Enter: no trust
        elif check.status == "refused":
            self._status(
                Content.assemble(("host key refused: ", "bold $error"), (check.host, "bold")),
                Content.styled(check.message, "$error"),
                *_row_if("fix", check.fix),
                Content.styled("rgt-tui does not trust a changed or revoked key.", MUTED),
            )
        else:  # unreachable: the key is checked when the box answers (K on its pane)
            self._status(
                Content.assemble(("not checked: ", "bold $warning"), (check.host, "bold")),
                Content.styled(check.message, "$warning"),
                *_row_if("fix", check.fix),
                Content.styled("Add anyway: its host key is checked when it answers.", MUTED),
            )
            self._add_anyway(add)
        self.show_hint()

    def _add_anyway(self, add: DialogButton) -> None:
        add.set_caption("Add anyway", does="add the box anyway")
        add.disabled = False
        self.show_hint()

    def _forget_check(self) -> None:
        self.new = self.check = None
        self._same_account = None
        add = self.query_one("#add-add", DialogButton)
        add.disabled = True
        add.set_caption("Add", does="add the box")
        self.query_one("#add-trust", Button).display = False
        self.show_hint()

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        self.query_one("#add-check", Button).disabled = busy
        self.show_hint()

    # -- trusting ------------------------------------------------------------------------

    @on(Button.Pressed, "#add-trust")
    def _trust_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_trust()

    def action_trust(self) -> None:
        """The Trust button: write the box's own unknown key (only once shown;
        a jump host's key is trusted from K on the host's pane, its name typed)."""
        if not self._trustable():
            return
        check = self.check
        if check is None or not check.can_trust or self._busy:
            return
        self._set_busy(True)
        run_work(self, self._trust(check), "add-host:trust", group="add-host")

    async def _trust(self, check: KeyCheck) -> None:
        try:
            path = await asyncio.to_thread(trust_key, check)
        except (ValueError, OSError) as exc:
            self.post_message(self.Trusted(None, str(exc)))
            return
        self.post_message(self.Trusted(path))

    @on(Trusted)
    def _trusted(self, message: Trusted) -> None:
        self._set_busy(False)
        check = self.check
        if message.path is None or check is None:
            self._status(Content.styled(f"could not trust the key: {message.error}", "$error"))
            return
        self.check = replace(check, status="trusted", message=f"trusted {check.fingerprint}")
        self._trusted_in = message.path
        self.query_one("#add-cancel", DialogButton).set_caption("Cancel", does=self._cancel_does())
        self.query_one("#add-trust", Button).display = False
        self._status(
            Content.styled(f"trusted {check.fingerprint}", "$success"),
            _row("added to", str(message.path)),
        )
        add = self.query_one("#add-add", Button)
        add.disabled = False
        name = self.query_one("#add-name", Input)
        if self._check_from is self.query_one("#add-target", Input) and not isinstance(
            self.focused, Input
        ):
            # Checked by Enter right after the paste, then trusted: on to the name, as a
            # key already trusted goes (h604 #7: Add was focused, and the next Enter
            # wrote a name, folders and a run template never seen).
            self.set_focus(name)
        else:
            self._focus_add_or_cancel(add)
        self.show_hint()

    def _focus_add_or_cancel(self, add: Button) -> None:
        """Add is ready: focused, unless another entry already logs in to the account —
        then Cancel is (Add one Shift+Tab away), as after any other dialog's warning: Enter added
        an entry that blocks every later launch of both (hour s22a #6)."""
        if self._same_account:
            self._focus_unless_typing(self.query_one("#add-cancel", Button))
        else:
            self._focus_unless_typing(add)

    def _focus_unless_typing(self, widget: Button) -> None:
        """Focus ``widget`` unless the user moved on into a field while the work ran: a
        key typed there must never become a button's Enter (or ``t``)."""
        focused = self.focused
        if isinstance(focused, Input) and focused is not self._check_from:
            return
        self.set_focus(widget)

    # -- adding --------------------------------------------------------------------------

    @on(Button.Pressed, "#add-add")
    def _add_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if self.new is None or self.check is None or self.check.status == "refused":
            return
        if self.check.status == "unknown" and not _behind_unknown_jump(self.check):
            return  # the box's own key: Trust first
        if self._busy:
            return
        self._set_busy(True)
        self.query_one("#add-add", Button).disabled = True
        run_work(
            self, self._add(self._values(), self.new, self.check), "add-host:add", group="add-host"
        )

    async def _add(self, values: Values, checked: NewHost, check: KeyCheck) -> None:
        try:
            # Name, profile, cost and launch keys as they are now; the target as checked.
            new, _ = await self._new_host((checked.pasted or checked.ssh, *values[1:]))
            # The fingerprint shown was the jump host's, not the box's: none is noted.
            seen = None if _behind_unknown_jump(check) else check.fingerprint
            new = replace(new, fingerprint=seen)
            host = await asyncio.to_thread(add_to_fleet, new, self.fleet_file)
        except AddRefused as exc:
            self.post_message(self.Added(None, exc))
            return
        try:
            made = await asyncio.to_thread(
                create_missing_queue, new.keys, new.name, self.fleet_file
            )
            note = f"created {made}: one cell per line, <config> <task> [epochs]" if made else ""
        except OSError as exc:
            note = f"could not create the queue file of {new.name}: {exc}"
        warning = await asyncio.to_thread(fleet_in_code, new.keys, self.fleet_file)
        self.post_message(self.Added(host, None, note, warning or ""))

    @on(Added)
    def _added(self, message: Added) -> None:
        self._set_busy(False)
        if message.host is None:
            self._refused(message.refused or AddRefused("not added"))
            self.query_one("#add-add", Button).disabled = False
            return
        # Said in the app's one "added" toast, not one of its own beside it (h581 #5:
        # two stacked toasts said the same add).
        self.added_note = message.note
        if message.warning:
            self.app.notify(
                message.warning,
                title=f"added {message.host.name}",
                severity="warning",
                markup=False,  # local paths, shown as they are
            )
        self.dismiss(message.host)

    @on(Button.Pressed, "#add-cancel")
    def _cancel_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
