"""A secret written into a fleet file's command (h462 #4): found, shown cut, refused at
the line of ``teardown`` or ``run``; a value from the environment, a number, a path or a
template's field is no secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from rgt_tui.domain.config import ConfigError
from rgt_tui.domain.literal_secret import literal_secret
from rgt_tui.services.fleet.file import load_fleet


@pytest.mark.parametrize(
    ("command", "found"),
    [
        ("vastai destroy instance 123 --api-key 9f8e7d6c5b4a", "--api-key 9f8e…"),
        ("vastai destroy instance 123 --api-key=9f8e7d6c5b4a", "--api-key 9f8e…"),
        ("runpodctl remove pod x --apiKey 'RPKEY1234567'", "--apiKey RPKE…"),
        ("WANDB_API_KEY=abcdef0123456789 python train.py {cfg}", "WANDB_API_KEY=abcd…"),
        ("env HF_TOKEN=hf_abcdefghij python t.py", "HF_TOKEN=hf_a…"),
        ("curl -X DELETE --token sk-live-0123456789 https://api", "--token sk-l…"),
        # s46 #7: a header, a URL's query, curl's -u KEY: and a command inside a word.
        (
            'curl -X DELETE -H "Authorization: Bearer sk-abcdef0123456" https://x',
            "Authorization: sk-a…",
        ),
        ('curl -H "X-API-Key: abcdef012345" https://x', "X-API-Key: abcd…"),
        ("curl -u secret_abcdef12345: https://cloud.lambdalabs.com/api", "-u secr…"),
        ("curl -u admin:hunter2hunter2 https://x", "-u hunt…"),
        ('curl "https://api.x.com/v1/destroy?id=3&api_key=abcdef123456"', "api_key=abcd…"),
        ('sh -c "vastai destroy instance 1 --api-key 9f8e7d6c5b4a"', "--api-key 9f8e…"),
        ("bash -lc 'HF_TOKEN=hf_abcdefghijk python t.py {cfg}'", "HF_TOKEN=hf_a…"),
        # Review h482 #5 #6: the forms the first reading missed.
        ('curl -H"Authorization: Bearer sk-abcdefghijkl" https://x', "Authorization: sk-a…"),
        ('curl "--header=Authorization: Bearer sk-abcdefghijkl" x', "Authorization: sk-a…"),
        ('curl -H "PRIVATE-TOKEN: glpat-abcdefghijklmn" x', "PRIVATE-TOKEN: glpa…"),
        ('curl -H "Authorization: Bearer sk-abc/def+ghijkl==" x', "Authorization: sk-a…"),
        ("curl -uKEYabcdefgh12345: https://x", "-u KEYa…"),
        ("curl --user=KEYabcdefgh12345: https://x", "--user KEYa…"),
        ("curl -u secret_abcdef12345 https://cloud.lambdalabs.com/api", "-u secr…"),
        (
            "git clone https://me:ghp_abcdefghijklmnopqrst@github.com/o/r.git",
            "a URL's password ghp_…",
        ),
        # h553 #9: a token as the URL's user, GitHub's and Hugging Face's way.
        (
            "git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/x/y",
            "a URL's token ghp_…",
        ),
        ("git clone https://hf_abcdefghijklmnop@huggingface.co/m", "a URL's token hf_a…"),
        ("docker run --env=HF_TOKEN=hf_abcdefghijk img", "HF_TOKEN=hf_a…"),
        (
            "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY aws s3 ls",
            "AWS_SECRET_ACCESS_KEY=wJal…",
        ),
        ("python t.py --hub_token hf_abcdefghijk", "--hub_token hf_a…"),
        ("python t.py --wandb_api_key abcdef0123456", "--wandb_api_key abcd…"),
        ("wandb login abcdef0123456789 && python t.py", "wandb login abcd…"),
        # Review h483 #4: a command that ssh, tmux or eval runs; Google's and Vault's
        # headers; httpie's header word; curl behind sudo.
        ('ssh bastion "vastai destroy instance 123 --api-key 9f8e7d6c5b4a"', "--api-key 9f8e…"),
        ('timeout 30 ssh b "vastai destroy 1 --api-key 9f8e7d6c5b4a"', "--api-key 9f8e…"),
        ('tmux new -d "python train.py --api-key abcdef123456"', "--api-key abcd…"),
        ('eval "export HF_TOKEN=hf_abcdefghijk"', "HF_TOKEN=hf_a…"),
        ('curl -H "x-goog-api-key: AIzaSyabcdefgh123456" x', "x-goog-api-key: AIza…"),
        ('http POST api.x.com Authorization:"Bearer sk-abcdefgh1234"', "Authorization: sk-a…"),
        ("sudo -E curl -u secret_abcdef12345: https://x", "-u secr…"),
        ("curl -fsS -u abc123def456ghi:x https://x; python -u t2.py {cfg} {out}", "-u abc1…"),
    ],
)
def test_a_secret_written_in_a_command_is_found_and_cut(command: str, found: str) -> None:
    assert literal_secret(command) == found
    assert found.removesuffix("…") and "5678" not in found  # never the whole value


@pytest.mark.parametrize(
    "command",
    [
        "vastai destroy instance 123",
        'vastai destroy instance 123 --api-key "$VAST_API_KEY"',
        "MAX_TOKENS=10000000 python train.py --config {cfg} --out {out}",
        "SSH_KEY=~/.ssh/id_ed25519 python t.py",
        "python t.py --token {cfg}",
        "python t.py --password-file /run/secrets/pw",
        "NUM_TOKENS=4096 python t.py",
        "python train.py --api-key",  # no value: nothing written
        # A review's false positives: hydra overrides, data names, key pair names, paths.
        "python train.py tokenizer=bert-base-uncased metric_key=val_loss",
        "DATASET_KEY=imagenet-1k python t.py",
        "terraform destroy -var key_name=my-keypair",
        "SSH_KEY_PATH=keys/id_ed25519 python t.py",
        "gcloud run --secret my-secret-name",
        # What the header, query, -u and quoted-command readings must not take.
        "python -u train.py --config {cfg}",
        "docker run -u 1000:1000 img",
        'curl -H "Authorization: Bearer $TOKEN" https://x',
        'curl -u "$LAMBDA_API_KEY:" https://x',
        'curl "https://x/list?page=2&sort=name"',
        'sh -c "python t.py --config {cfg} --out {out}"',
        'python t.py --note "Authorization: none"',
        # Review h482 #2 #3 #4: -u / --user of other programs, quoted prose, headers and
        # query keys that name no secret, a tokenizer's special tokens.
        "docker exec -u postgres:postgres db psql",
        "docker run --user researcher:researchers img",
        "rsync -u box1:checkpoints ./",
        "socat -u TCP-LISTEN:8080,fork OPEN:out.log",
        'python t.py --desc "use --password carefully please"',
        'wandb run --notes "rerun with --api-key rotation disabled"',
        'python t.py --run_name "HF_TOKEN=unsetting baseline"',
        'curl -H "X-Cache-Key: build-cache-main-123" https://x',
        'curl -H "X-Idempotency-Key: 2c1f9a9e-3b1b-4cfe" https://x',
        'python t.py --prompt "Authorization: required"',
        'python t.py --url "https://x.com/a?key=validation&page=1"',
        'python t.py --sweep "lr=1e-4&key=abcdefghijk"',
        'python train.py --pad_token "<|endoftext|>" --eos_token "<|endoftext|>"',
        'curl -H "Authorization: Bearer $(cat ~/.key)" https://x',
        "wandb login --relogin",
        # Whitespace shlex does not split on (a pasted no-break space) once recursed
        # forever (review h482 #1: RecursionError loading the fleet file).
        'python t.py --x "a\u00a0b"',
        "vastai destroy instance 123\u00a0--yes",
        'sh -c "a\x0bb"',
        # Review h483 #3 #5: curl's -u is asked of curl's own command only; a secret
        # key's path; a port and a query's "@"; a dataset split under ?key=.
        "curl -fsS https://hc-ping.com/$ID/start; python -u finetune_llama3.py --config {cfg}",
        'bash -c "curl -fsS $NOTIFY; python -u run_gpt2.py {cfg}"',
        "curl -s $URL | sort -u results_2024.txt",
        "curl -fsS $U && docker run -u trainer:research img",
        "SECRET_KEY=./secret.key python t.py",
        "GCP_SECRET_KEY=~/keys/gcp.json python t.py",
        "python t.py --url http://localhost:8080?email=a@b.com",
        'python t.py --url "https://x/ds?key=train2017"',
        'python t.py --backend ssh "some prose here --token abcdefghijk"',
        # A URL's plain user is no token (h553 #9's rule goes by the providers' prefixes).
        "git clone https://researcher@github.com/x/y && python t.py {cfg}",
        "git clone https://github_user_01@gitlab.example/x/y",
    ],
)
def test_no_secret_in_what_is_not_one(command: str) -> None:
    assert literal_secret(command) is None


def test_the_fleet_file_refuses_it_at_its_line_and_says_where_it_goes(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(
        '[[hosts]]\nname = "box1"\nssh = "root@10.0.0.5"\n'
        'teardown = "vastai destroy instance 123 --api-key 9f8e7d6c5b4a3f2e"\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_fleet(hosts)
    said = str(caught.value)
    assert f"{hosts}:4" in said and "--api-key 9f8e…" in said, said
    assert "9f8e7d6c" not in said  # the key itself is never repeated
    assert "vastai set api-key" in said and "not out of ps" in said, said
    hosts.write_text(
        '[[hosts]]\nname = "box1"\nssh = "root@10.0.0.5"\n'
        'run = "WANDB_API_KEY=abcdef0123456789 python train.py {cfg} {out}"\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_fleet(hosts)
    said = str(caught.value)
    assert f"{hosts}:4" in said and "WANDB_API_KEY=abcd…" in said and "[fleet.credentials]" in said


def test_a_secret_of_the_environment_is_taken_out_of_a_commands_output() -> None:
    """h472 #4: a destroy command that echoes its key showed it and kept it in the
    journal. Only secret-named variables, values of 8 characters or more."""
    from rgt_tui.domain.literal_secret import without_env_secrets

    env = {
        "API_TOKEN": "supersecret123",
        "VAST_API_KEY": "supersecret123-and-more",  # holds the other: replaced whole
        "HF_TOKEN": "short",
        "HOME": "/root/supersecret",
        "tokenizer": "supersecret123xyz",
    }
    out = "using supersecret123-and-more then supersecret123 in /root/supersecret (short)\n"
    assert without_env_secrets(out, env) == (
        "using $VAST_API_KEY then $API_TOKEN in /root/supersecret (short)\n"
    )


async def test_the_teardown_command_never_shows_nor_keeps_the_key_it_echoed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real command run as a teardown (and autostop's stop) is: its output is what the
    checklist shows and the journal records."""
    from rgt_tui.services.teardown.command import run_teardown_command

    monkeypatch.setenv("API_TOKEN", "supersecret123")
    run = await run_teardown_command('echo "using token $API_TOKEN"; exit 3', tmp_path, 30.0)
    assert run.status == 3 and run.output == "using token $API_TOKEN\n", run


async def test_a_cut_output_begins_at_a_whole_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review h473 #4: only the output's last 64 KiB is kept, and a cut that began inside
    a key kept that key's tail, which no redaction knows."""
    from rgt_tui.services.teardown.command import OUTPUT_CAP, run_teardown_command

    monkeypatch.setenv("API_TOKEN", "supersecret123")
    filler = OUTPUT_CAP - 12  # the kept part begins 10 characters into the key's line
    command = f'echo "$API_TOKEN"; head -c {filler} /dev/zero | tr "\\0" x; echo'
    run = await run_teardown_command(command, tmp_path, 30.0)
    assert "secret123" not in run.output and "ecret" not in run.output
    assert run.output.startswith("[earlier output cut]\n"), run.output[:40]
