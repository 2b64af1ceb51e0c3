"""Reading credentials on this machine (U34): each source, each way it can be missing,
and errors that name the credential and the fix but never a value."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from rgt_tui.domain.config import Credential
from rgt_tui.services.credentials import (
    MAX_FILE_BYTES,
    CredentialError,
    env_file_text,
    plan_line,
    resolve,
)


def error(cred: Credential, **kw: object) -> str:
    with pytest.raises(CredentialError) as info:
        resolve("h1", cred, **kw)  # type: ignore[arg-type]
    return str(info.value)


def test_env_source() -> None:
    cred = Credential("WANDB_API_KEY", "env", "MY_KEY")
    assert resolve("h1", cred, environ={"MY_KEY": "abc"}) == "abc"
    message = error(cred, environ={})
    assert message.startswith("h1: credential WANDB_API_KEY (env MY_KEY): ")
    assert "export MY_KEY=" in message
    assert "empty" in error(cred, environ={"MY_KEY": ""})
    # Bytes that are not UTF-8 (os.environ keeps them as surrogates): named, not a crash
    # at send time, and the value is not shown.
    message = error(cred, environ={"MY_KEY": "SECRET9\udcff\udcfe"})
    assert "not UTF-8" in message and "SECRET9" not in message


def test_netrc_source_takes_that_machines_password_never_the_default(tmp_path: Path) -> None:
    cred = Credential("WANDB_API_KEY", "netrc", "api.wandb.ai")
    netrc = tmp_path / ".netrc"
    netrc.write_text("default login x password DEFAULT-SECRET\n")
    message = error(cred, home=tmp_path)
    assert "has no machine api.wandb.ai" in message and "DEFAULT-SECRET" not in message
    netrc.write_text("machine api.wandb.ai\n  login user\n  password k3y\n")
    assert resolve("h1", cred, home=tmp_path) == "k3y"
    assert "does not exist" in error(cred, home=tmp_path / "nowhere")
    # Bytes that are not UTF-8: named, not a traceback (review h544 #7).
    netrc.write_bytes(b"machine api.wandb.ai\n  login user\n  password ab\xe9SECRET12\n")
    message = error(cred, home=tmp_path)
    assert "is not UTF-8 text" in message and "SECRET12" not in message


def test_a_netrc_that_cannot_be_parsed_is_named_by_line_without_its_text(tmp_path: Path) -> None:
    (tmp_path / ".netrc").write_text("machine a login b password c\nTOKEN-LIKE-SECRET junk\n")
    message = error(Credential("K", "netrc", "a"), home=tmp_path)
    assert "line 2" in message and "TOKEN-LIKE-SECRET" not in message


def test_file_source(tmp_path: Path) -> None:
    token = tmp_path / "token"
    cred = Credential("HF_TOKEN", "file", str(token))
    token.write_text("hf_abc\n")
    assert resolve("h1", cred) == "hf_abc"
    token.write_text("hf_abc\r\n\n")  # an editor's blank line after it: not the token's
    assert resolve("h1", cred) == "hf_abc"
    token.write_text("-----BEGIN-----\nkey\n-----END-----\n")  # a PEM keeps its lines
    assert resolve("h1", cred) == "-----BEGIN-----\nkey\n-----END-----"
    token.write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    assert "over 64 KiB" in error(cred)
    token.write_bytes(b"\xff\xfe")
    assert "not UTF-8" in error(cred)
    token.unlink()
    assert "does not exist" in error(cred)
    # h603 #7: a FIFO hung preflight for good; a folder read "check its permissions".
    os.mkfifo(token)
    assert "is not a regular file (a folder, a pipe or a device)" in error(cred)
    token.unlink()
    token.mkdir()
    assert "is not a regular file" in error(cred) and "permissions" not in error(cred)


def test_the_env_file_is_bash_that_gives_back_each_value_exactly() -> None:
    values = [("A", "it's a $(dangerous) `value`\nwith a newline"), ("B", "-n")]
    text = env_file_text(values)
    out = subprocess.run(
        ["bash", "-c", text + 'printf "%s|" "$A" "$B"'], capture_output=True, text=True, check=True
    ).stdout
    assert out == "it's a $(dangerous) `value`\nwith a newline|-n|"


def test_the_plan_names_sources_only() -> None:
    creds = (Credential("WANDB_API_KEY", "netrc", "api.wandb.ai"), Credential("T", "env", "T"))
    assert plan_line(creds).startswith("WANDB_API_KEY (netrc api.wandb.ai), T (env T) → ")
    assert plan_line(()) == ""


def test_a_value_is_hidden_whole_however_a_shell_or_a_printout_splits_it() -> None:
    """h545 #5: echoed unquoted (its tab a blank), as `printf %q` shows it, or as repr():
    the first piece was hidden and the rest shown. Every piece of 4 or more characters
    between the characters a shell or a printout splits or escapes is hidden."""
    import shlex as sh

    from rgt_tui.services.credentials import masked

    secret = "s3cr'etLONGPART$HOME\\xMORE\tüZZYTAIL"
    shown_as = [
        " ".join(secret.split()),  # echo $TOKEN: word splitting
        sh.quote(secret),
        repr(secret),
        "q=$'s3cr\\'etLONGPART$HOME\\\\xMORE\\tüZZYTAIL'",  # printf %q
    ]
    for text in shown_as:
        out = masked(f"key: {text}", [secret])
        for piece in ("s3cr", "etLONGPART", "HOME", "xMORE", "üZZYTAIL"):
            assert piece not in out, (text, out)
