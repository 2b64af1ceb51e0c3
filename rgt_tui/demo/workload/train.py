"""A small, real PyTorch training run for the demo queue (CPU, a few seconds per cell).

    python3 train.py --config configs/box1_lr3e-4.json --task reconstruction \
        --epochs 3 --out results/box1_lr3e-4

It does what a queue cell must do to survive anything (principle 8):

- checkpoints its FULL state — model, optimizer, step, and the torch and Python RNG
  states — every ``checkpoint_every`` steps to ``{out}/checkpoint.pt``, atomically
  (write a temp file, fsync, ``os.replace``), so a kill mid-write never leaves a torn
  checkpoint;
- after each checkpoint, writes its sidecar ``{out}/checkpoint.json`` (``{"step": N,
  "sha256": <the checkpoint's>}``, atomically too): ``rgt-tui queue move`` reads the
  step of a pulled-and-verified checkpoint from it, trusted only when its SHA-256 is
  that checkpoint's (docs/spot.md);
- loads that checkpoint unconditionally on start, so the same command resumes where
  the last run stopped (a finished run exits at once), and prints the step it loaded;
- writes ``{out}/metrics.json`` and exits 0.

Config (JSON): lr, hidden, batch, seed, steps_per_epoch, checkpoint_every, step_sleep_s
(the last paces the demo so there is something to watch). Tasks: reconstruction (an
autoencoder, MSE) and classification (cross-entropy on a fixed random teacher's labels).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
import warnings
from pathlib import Path

# torch warns at import when numpy is absent; this workload never uses numpy.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402
from torch import nn  # noqa: E402

TASKS = ("reconstruction", "classification")
FEATURES, CLASSES = 16, 4


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (the queue's run template fills them in)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--config", required=True, help="JSON config file")
    p.add_argument("--task", required=True, choices=TASKS)
    p.add_argument("--epochs", type=int, required=True)
    p.add_argument("--out", required=True, help="this cell's own output directory")
    return p.parse_args(argv)


def build_model(task: str, hidden: int) -> nn.Module:
    """An MLP: an autoencoder for reconstruction, a classifier otherwise."""
    out = FEATURES if task == "reconstruction" else CLASSES
    return nn.Sequential(
        nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Dropout(0.1), nn.Linear(hidden, out)
    )


def batch(task: str, seed: int, step: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The batch of ``step``, a pure function of (seed, step): a resumed run sees the same
    data it would have seen without the interruption."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step)
    x = torch.randn(size, FEATURES, generator=g)
    if task == "reconstruction":
        return x, x
    teacher = torch.Generator().manual_seed(seed)
    w = torch.randn(FEATURES, CLASSES, generator=teacher)
    return x, (x @ w).argmax(dim=1)


def save_atomically(state: dict, path: Path) -> None:
    """tmp → fsync → os.replace, then fsync the directory so the rename itself is durable."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_sidecar(ckpt_path: Path, step: int) -> None:
    """``checkpoint.json`` beside the checkpoint: its step and SHA-256, atomically, so a
    sidecar always names the one checkpoint it describes."""
    digest = hashlib.sha256()
    with open(ckpt_path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    side = ckpt_path.with_suffix(".json")
    tmp = side.with_name(side.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump({"step": step, "sha256": digest.hexdigest()}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, side)


def main(argv: list[str] | None = None) -> int:
    """Train (or resume) one cell; 0 on success."""
    args = parse_args(argv)
    cfg = json.loads(Path(args.config).read_text())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ckpt_path = out / "checkpoint.pt"
    seed = int(cfg.get("seed", 0))
    steps_per_epoch = int(cfg.get("steps_per_epoch", 10))
    every = max(1, int(cfg.get("checkpoint_every", 5)))
    pause = float(cfg.get("step_sleep_s", 0.0))
    total = args.epochs * steps_per_epoch

    torch.manual_seed(seed)
    random.seed(seed)
    model = build_model(args.task, int(cfg.get("hidden", 32)))
    opt = torch.optim.Adam(model.parameters(), lr=float(cfg.get("lr", 1e-3)))
    loss_fn = nn.MSELoss() if args.task == "reconstruction" else nn.CrossEntropyLoss()
    step, starts, losses = 0, [], []
    if ckpt_path.exists():
        # weights_only: tensors, numbers and containers only — never arbitrary pickles.
        state = torch.load(ckpt_path, weights_only=True)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["torch_rng"])
        random.setstate((state["py_rng"][0], tuple(state["py_rng"][1]), state["py_rng"][2]))
        step, starts, losses = state["step"], list(state["starts"]), list(state["losses"])
        print(f"resumed from {ckpt_path} at step {step}/{total}")
    else:
        print(f"fresh start: no checkpoint at {ckpt_path}")
    starts.append(step)
    print(f"task {args.task}, {total} steps, torch threads {torch.get_num_threads()}")

    def checkpoint() -> None:
        py = random.getstate()
        save_atomically(
            {
                "model": model.state_dict(),
                "optimizer": opt.state_dict(),
                "step": step,
                "starts": starts,
                "losses": losses,
                "torch_rng": torch.get_rng_state(),
                "py_rng": [py[0], list(py[1]), py[2]],
                "config": cfg,
                "task": args.task,
            },
            ckpt_path,
        )
        write_sidecar(ckpt_path, step)

    model.train()
    while step < total:
        x, y = batch(args.task, seed, step, int(cfg.get("batch", 32)))
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        step += 1
        losses.append(round(loss.item(), 6))
        if step % every == 0 or step == total:
            checkpoint()
        if step % steps_per_epoch == 0:
            print(
                f"epoch {step // steps_per_epoch}/{args.epochs} step {step} loss {loss.item():.4f}"
            )
        if pause:
            time.sleep(pause)
    if not ckpt_path.exists():
        checkpoint()  # a run of zero steps still leaves its state

    metrics = {
        "task": args.task,
        "epochs": args.epochs,
        "steps": step,
        "starts": starts,
        "final_loss": losses[-1] if losses else None,
        "first_loss": losses[0] if losses else None,
    }
    tmp = out / "metrics.json.tmp"
    tmp.write_text(json.dumps(metrics, indent=2) + "\n")
    os.replace(tmp, out / "metrics.json")
    print(f"done: {step} steps, final loss {metrics['final_loss']}; wrote {out / 'metrics.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
