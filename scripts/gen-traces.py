#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generate the bundled training-step traces in traces/ (alloy-trace 1).

Each trace is one training step of a model, written as the sequence of
device allocations and frees a framework makes for it, with the sizes
computed from the model's shapes (not recorded from a real run):

  transformer_step.trace  GPT-style decoder, 12 layers, hidden 1024, 16 heads,
                          batch 8 x seq 512, fp16 activations, fp32 master
                          weights and Adam state (mixed precision)
  resnet_step.trace       ResNet-50-shaped CNN, batch 32, 224x224, fp32,
                          with a convolution workspace around every conv
  varlen_step.trace       the transformer at 6 sequence lengths in a row
                          (dynamic shapes: batches bucketed by length)

The step allocates its parameters, gradients and optimizer state first and
frees everything at the end, so a trace replays on its own and repeats
(alloy bench cuda replays each several times: the first repetition warms
the cache, the later ones must need no device calls).

Usage: scripts/gen-traces.py [OUTDIR]   (default: traces/)
"""
import os
import sys

ALIGN = 256
DEV = "cuda:0"
ALLOC = "cuda_caching"


class Trace:
    def __init__(self):
        self.lines = []
        self.t = 0
        self.next_id = 1
        self.live = {}

    def alloc(self, size):
        size = int(size)
        assert size > 0
        self.t += 1000
        bid = self.next_id
        self.next_id += 1
        self.live[bid] = size
        self.lines.append("a %d 1 %x %d %d %s %s" % (self.t, bid, size, ALIGN, ALLOC, DEV))
        return bid

    def free(self, bid):
        self.t += 1000
        size = self.live.pop(bid)
        self.lines.append("f %d 1 %x %d %d %s %s" % (self.t, bid, size, ALIGN, ALLOC, DEV))

    def free_all(self, ids):
        for b in ids:
            self.free(b)

    def write(self, path, comment):
        assert not self.live, "trace leaves %d blocks live" % len(self.live)
        with open(path, "w") as f:
            f.write("alloy-trace 1 pid=0\n")
            for c in comment.strip().splitlines():
                f.write("# %s\n" % c)
            for line in self.lines:
                f.write(line + "\n")
            f.write("end %d %d\n" % (self.t + 1000, len(self.lines)))


def transformer_step(tr, layers=12, h=1024, heads=16, batch=8, seq=512, vocab=50257,
                     persistent=None):
    """One mixed-precision training step; persistent state is made once."""
    half, full = 2, 4
    tok = batch * seq
    shapes = []  # parameter element counts
    shapes.append(vocab * h)  # embedding (tied with the output layer)
    shapes.append(seq * h)    # positions
    for _ in range(layers):
        shapes += [3 * h * h, 3 * h, h * h, h, 4 * h * h, 4 * h, 4 * h * h, h, h, h, h, h]
    shapes += [h, h]  # final layer norm
    own = persistent is None
    if own:
        persistent = {
            "params16": [tr.alloc(n * half) for n in shapes],
            "master32": [tr.alloc(n * full) for n in shapes],
            "adam_m": [tr.alloc(n * full) for n in shapes],
            "adam_v": [tr.alloc(n * full) for n in shapes],
        }
    # forward: saved activations per layer, temporaries freed at once
    ids = tr.alloc(tok * 8)                 # token ids (int64)
    x = tr.alloc(tok * h * half)            # embeddings
    saved = []
    for _ in range(layers):
        s = {}
        s["ln1"] = tr.alloc(tok * h * half)
        s["ln1_stats"] = tr.alloc(tok * 2 * full)
        s["qkv"] = tr.alloc(tok * 3 * h * half)
        scores = tr.alloc(batch * heads * seq * seq * half)
        s["probs"] = tr.alloc(batch * heads * seq * seq * half)
        tr.free(scores)
        s["mask"] = tr.alloc(batch * heads * seq * seq)  # dropout mask, bytes
        s["ctx"] = tr.alloc(tok * h * half)
        proj = tr.alloc(tok * h * half)
        x2 = tr.alloc(tok * h * half)         # residual
        tr.free(proj)
        s["ln2"] = tr.alloc(tok * h * half)
        s["ln2_stats"] = tr.alloc(tok * 2 * full)
        s["fc1"] = tr.alloc(tok * 4 * h * half)
        s["gelu"] = tr.alloc(tok * 4 * h * half)
        fc2 = tr.alloc(tok * h * half)
        x3 = tr.alloc(tok * h * half)
        tr.free(fc2)
        s["x_in"] = x
        tr.free(x2)
        x = x3
        saved.append(s)
    lnf = tr.alloc(tok * h * half)
    logits = tr.alloc(tok * vocab * half)
    loss_tmp = tr.alloc(tok * full)
    loss = tr.alloc(full)
    tr.free(loss_tmp)
    # backward
    grads = [tr.alloc(n * half) for n in shapes]
    dlogits = tr.alloc(tok * vocab * half)
    tr.free(logits)
    dx = tr.alloc(tok * h * half)
    tr.free(dlogits)
    tr.free(lnf)
    for s in reversed(saved):
        dgelu = tr.alloc(tok * 4 * h * half)
        dfc1 = tr.alloc(tok * 4 * h * half)
        tr.free(dgelu)
        dln2 = tr.alloc(tok * h * half)
        tr.free(dfc1)
        dctx = tr.alloc(tok * h * half)
        dprobs = tr.alloc(batch * heads * seq * seq * half)
        dscores = tr.alloc(batch * heads * seq * seq * half)
        tr.free(dprobs)
        dqkv = tr.alloc(tok * 3 * h * half)
        tr.free(dscores)
        dln1 = tr.alloc(tok * h * half)
        tr.free(dqkv)
        dx_new = tr.alloc(tok * h * half)
        tr.free_all([dln2, dctx, dln1, dx])
        dx = dx_new
        tr.free_all([s[k] for k in ("ln1", "ln1_stats", "qkv", "probs", "mask", "ctx",
                                    "ln2", "ln2_stats", "fc1", "gelu", "x_in")])
    tr.free(x)
    tr.free(dx)
    tr.free(ids)
    tr.free(loss)
    # optimizer: fp32 copies of the gradients, unscale and update, recast
    for g in grads:
        n = tr.live[g] // half
        g32 = tr.alloc(n * full)
        tmp = tr.alloc(n * full)
        tr.free(tmp)
        tr.free(g32)
    norm = tr.alloc(full)
    tr.free(norm)
    tr.free_all(grads)
    if own:
        for k in ("params16", "master32", "adam_m", "adam_v"):
            tr.free_all(persistent[k])


def resnet_step(tr, batch=32):
    """ResNet-50 shapes: (blocks, mid channels, out channels, spatial)."""
    f = 4
    params = []
    acts = []

    def conv(cin, cout, k, hw_out, keep=True):
        params.append(tr.alloc(cin * cout * k * k * f))
        params.append(tr.alloc(cout * f))
        params.append(tr.alloc(cout * f))         # bn weight
        params.append(tr.alloc(cout * f))         # bn bias
        params.append(tr.alloc(cout * f))         # running mean
        params.append(tr.alloc(cout * f))         # running var
        ws = tr.alloc(min(64 << 20, max(1 << 20, cin * k * k * hw_out * hw_out * f // 8)))
        out = tr.alloc(batch * cout * hw_out * hw_out * f)
        tr.free(ws)
        mean = tr.alloc(cout * f)
        var = tr.alloc(cout * f)
        bn = tr.alloc(batch * cout * hw_out * hw_out * f)
        acts.extend([out, mean, var])
        return bn

    img = tr.alloc(batch * 3 * 224 * 224 * f)
    labels = tr.alloc(batch * 8)
    x = conv(3, 64, 7, 112)
    pool = tr.alloc(batch * 64 * 56 * 56 * f)
    acts.append(x)
    x = pool
    cin = 64
    for blocks, mid, cout, hw in ((3, 64, 256, 56), (4, 128, 512, 28),
                                  (6, 256, 1024, 14), (3, 512, 2048, 7)):
        for b in range(blocks):
            a = conv(cin, mid, 1, hw)
            c = conv(mid, mid, 3, hw)
            d = conv(mid, cout, 1, hw)
            if b == 0:
                sc = conv(cin, cout, 1, hw)
                acts.append(sc)
            acts.extend([x, a, c])
            x = d
            cin = cout
    acts.append(x)
    pooled = tr.alloc(batch * 2048 * f)
    fc_w = tr.alloc(2048 * 1000 * f)
    logits = tr.alloc(batch * 1000 * f)
    loss = tr.alloc(f)
    params.append(fc_w)
    # backward: one gradient per parameter, activation grads in reverse
    grads = [tr.alloc(tr.live[p]) for p in params]
    d = tr.alloc(batch * 1000 * f)
    tr.free_all([logits, pooled])
    for a in reversed(acts):
        g = tr.alloc(tr.live[a])
        ws = tr.alloc(min(64 << 20, max(1 << 20, tr.live[a] // 4)))
        tr.free(ws)
        tr.free(d)
        tr.free(a)
        d = g
    tr.free(d)
    tr.free_all([img, labels, loss])
    # SGD with momentum: momentum buffers are persistent in a real run;
    # here each step makes them, which is what a step after a restart does.
    mom = [tr.alloc(tr.live[p]) for p in params]
    tr.free_all(grads)
    tr.free_all(mom)
    tr.free_all(params)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "traces")
    os.makedirs(out, exist_ok=True)

    tr = Trace()
    transformer_step(tr)
    tr.write(os.path.join(out, "transformer_step.trace"),
             "One training step of a GPT-style decoder (12 layers, hidden 1024,\n"
             "16 heads, batch 8 x seq 512, fp16 + fp32 master weights, Adam).\n"
             "Generated by scripts/gen-traces.py from the model's shapes.")

    tr = Trace()
    resnet_step(tr)
    tr.write(os.path.join(out, "resnet_step.trace"),
             "One training step of a ResNet-50-shaped CNN (batch 32, 224x224, fp32)\n"
             "with a convolution workspace around every conv.\n"
             "Generated by scripts/gen-traces.py from the model's shapes.")

    tr = Trace()
    for seq in (512, 384, 448, 256, 320, 512):
        transformer_step(tr, layers=6, seq=seq)
    tr.write(os.path.join(out, "varlen_step.trace"),
             "Six steps of a 6-layer GPT-style decoder at sequence lengths\n"
             "512, 384, 448, 256, 320, 512 (dynamic shapes, batch 8).\n"
             "Generated by scripts/gen-traces.py from the model's shapes.")


if __name__ == "__main__":
    main()
