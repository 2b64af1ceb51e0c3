"""A tiny distributed training job for the group tests (issue 41), run by ``torchrun``.

CPU torch with the gloo backend stands in for NCCL (no GPU here): the rendezvous, the
all-reduce and the failure of a peer behave the same way for what the tests check.

    ddp_train.py OUT STEPS MODE

It all-reduces each worker's rank + 1 (prints ``allreduce <sum> world <n>``), loads the
latest checkpoint from OUT when there is one (prints ``loaded step <k>``: the relaunch's
proof, MN5), trains a linear model STEPS steps, and the writer (the box rank 0 of the
group, ``RGT_NODE_RANK=0``: torchrun's c10d rendezvous numbers workers itself) saves the
checkpoint atomically after each step. MODE ``hold``: on a run that started at step 0,
the writer sleeps HOLD_S after step 2's checkpoint, outside any collective, while its peer
waits in one (the tests kill the peer then: the writer would not notice for HOLD_S).
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

HOLD_S = 120.0


def main() -> int:
    out, steps, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    timeout = timedelta(seconds=int(os.environ.get("RGT_NCCL_TIMEOUT_S", "600")))
    dist.init_process_group("gloo", timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    writer = os.environ.get("RGT_NODE_RANK") == "0" and os.environ.get("LOCAL_RANK") == "0"
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    print(f"allreduce {total.item():g} world {world}", flush=True)
    # The writer's global rank, known to all: it loads and broadcasts the state.
    src = torch.tensor([rank if writer else -1])
    dist.all_reduce(src, op=dist.ReduceOp.MAX)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ckpt = os.path.join(out, "ckpt.pt")
    step = torch.tensor([0])
    if writer and os.path.exists(ckpt):
        state = torch.load(ckpt, weights_only=True)
        model.load_state_dict(state["model"])
        step[0] = int(state["step"])
    dist.broadcast(step, int(src.item()))
    for p in model.parameters():
        dist.broadcast(p.data, int(src.item()))
    start = int(step.item())
    print(f"loaded step {start}", flush=True)
    if writer:
        os.makedirs(out, exist_ok=True)
    data = torch.Generator().manual_seed(1 + rank)
    loss = torch.tensor(0.0)
    for k in range(start, steps):
        x = torch.randn(8, 4, generator=data)
        loss = ((model(x) - x.sum(dim=1, keepdim=True)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():  # DDP's gradient all-reduce, by hand
            assert p.grad is not None
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        if writer:
            tmp = ckpt + ".tmp"
            torch.save({"model": model.state_dict(), "step": k + 1}, tmp)
            os.replace(tmp, ckpt)
        print(f"step {k + 1} loss {loss.item():.4f}", flush=True)
        if writer and mode == "hold" and start == 0 and k + 1 == 2:
            print("holding", flush=True)
            time.sleep(HOLD_S)
        dist.barrier()
    if writer:
        with open(os.path.join(out, "metrics.json"), "w") as f:
            json.dump({"steps": steps, "loss": float(loss.item()), "world": world}, f)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Not sys.exit: gloo's worker thread may still be freeing the last barrier's work when
    # the interpreter finalizes; its tensor decref then needs the GIL, CPython ends the
    # thread with pthread_exit, and the unwind through torch's C++ frames aborts the
    # process ("terminate called without an active exception", SIGABRT: about 1 run in
    # 20 here, seen in a core's stack). A real training script can meet it too; the tests
    # need the cell's own exit status, so the process ends without finalizing.
    os._exit(code)
