# SPDX-License-Identifier: MIT
"""A two-rank PyTorch job: torch.distributed over gloo on this machine.

    python3 torch_ranks.py            start both ranks, print their results
    python3 torch_ranks.py RANK PORT  one rank (what the first form runs)

Each rank makes CPU tensors (one of 4 MiB it keeps until the end, so
that its memory is there to be seen), all_reduces a known tensor with
the other over gloo (env:// rendezvous on 127.0.0.1) and prints one line
with its pid and the result's sum and first values.  Exit 3 when gloo
cannot bind or connect on the loopback, so a test can skip.
"""
import os
import socket
import subprocess
import sys

WORLD = 2
CANNOT_BIND = 3


def rank_main(rank, port):
    import torch
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    try:
        dist.init_process_group("gloo", init_method="env://", rank=rank,
                                world_size=WORLD)
    except (RuntimeError, OSError) as e:
        print("gloo cannot bind on 127.0.0.1:%d: %s" % (port, e),
              file=sys.stderr)
        return CANNOT_BIND
    held = torch.ones(1 << 19, dtype=torch.float64)  # 4 MiB
    x = torch.arange(1000, dtype=torch.float64) * (rank + 1)
    dist.all_reduce(x, op=dist.ReduceOp.SUM)
    dist.barrier()
    print("rank %d pid %d sum %.1f first %s held %d" % (
        rank, os.getpid(), x.sum().item(),
        " ".join("%.1f" % v for v in x[:4].tolist()), held.numel()),
        flush=True)
    dist.destroy_process_group()
    return 0


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def job():
    port = free_port()
    ranks = [subprocess.Popen([sys.executable, __file__, str(r), str(port)],
                              stdout=subprocess.PIPE, text=True)
             for r in range(WORLD)]
    outs = [p.communicate(timeout=120)[0] for p in ranks]
    codes = [p.returncode for p in ranks]
    if CANNOT_BIND in codes:
        return CANNOT_BIND
    if any(codes):
        print("a rank failed: exit codes %s" % codes, file=sys.stderr)
        return 1
    for o in outs:
        sys.stdout.write(o)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3:
        sys.exit(rank_main(int(sys.argv[1]), int(sys.argv[2])))
    sys.exit(job())
