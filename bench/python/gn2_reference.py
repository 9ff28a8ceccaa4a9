#!/usr/bin/env python3
"""A plain-PyTorch GN2 (torch.nn only) as the baseline for bench_model.

The architecture follows salt's GN2 as described in docs/models.md: an init net
(Dense on cat([jet vars, track vars])), a pre-norm transformer encoder with
learnable registers appended after the tracks and a key-padding mask (padded
tokens receive attention but never send it), LayerNorm without affine
parameters, a GLU dense block Linear(D, 2D) -> act -> Linear(2D, D), out_proj and
a final norm, GlobalAttentionPooling, and three heads: jet classification (on
the pooled vector), track origin (per track, pooled vector as context first) and
vertexing (every ordered pair i != j of valid tracks, features
cat([context, x_i, x_j])), with salt's losses. Everything runs on the padded
[B, L, D] layout, the way salt's torch-math backend does on the CPU.

It prints one machine-readable line for bench/model.cpp:
    RESULT params=<n> sec_per_batch=<s> jets_per_s=<x>

Usage: /usr/bin/python3 bench/python/gn2_reference.py --batch 1000 --length 40 \
           --threads 2 --embed 256 --layers 4 --heads 8 --out 128 --task-hidden 128,64,32 \
           [--device cuda] [--precision bf16-mixed]
"""
import argparse
import math
import time

import torch
from torch import nn
import torch.nn.functional as F


def dense(sizes, act=nn.ReLU):
    """Linear+act per hidden layer, no activation after the last Linear."""
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(act())
    return nn.Sequential(*layers)


def layer_norm(x):
    return F.layer_norm(x, x.shape[-1:])  # no affine parameters


class SelfAttention(nn.Module):
    sdpa = False  # --attention sdpa: torch's fused kernel (flash / memory-efficient) instead of the math

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.in_proj_weight = nn.Parameter(torch.empty(3 * dim, dim))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * dim))
        nn.init.xavier_uniform_(self.in_proj_weight)
        self.out_proj = nn.Linear(dim, dim)

    def forward(self, x, key_pad):
        b, n, d = x.shape
        q, k, v = F.linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, -1)
        q, k, v = (t.view(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        if SelfAttention.sdpa:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=~key_pad[:, None, None, :])
            return self.out_proj(out.transpose(1, 2).reshape(b, n, d))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(key_pad[:, None, None, :], float("-inf"))
        out = torch.softmax(scores, -1) @ v
        return self.out_proj(out.transpose(1, 2).reshape(b, n, d))


class EncoderLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = SelfAttention(dim, heads)
        self.dense = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))

    def forward(self, x, key_pad):
        x = x + self.attn(layer_norm(x), key_pad)
        return x + self.dense(layer_norm(x))


class GN2(nn.Module):
    def __init__(self, n_jet, n_track, embed, layers, heads, out, task_hidden, registers=1):
        super().__init__()
        self.init_net = dense([n_jet + n_track, embed, embed])
        self.layers = nn.ModuleList(EncoderLayer(embed, heads) for _ in range(layers))
        self.registers = nn.Parameter(torch.randn(registers, embed) * 1e-4)
        self.out_proj = nn.Linear(embed, out)
        self.gate = nn.Linear(out, 1)
        self.jet_head = dense([out, *task_hidden, 4])
        self.origin_head = dense([out + out, *task_hidden, 8])
        self.vertex_head = dense([out + 2 * out, *task_hidden, 1])

    def forward(self, jets, tracks, pad, flavour, origin, vertex):
        b, n, _ = tracks.shape
        x = self.init_net(torch.cat([jets[:, None, :].expand(b, n, jets.shape[-1]), tracks], -1))
        x = torch.cat([x, self.registers.expand(b, -1, -1)], 1)
        key_pad = torch.cat([pad, pad.new_zeros(b, self.registers.shape[0])], 1)
        for layer in self.layers:
            x = layer(x, key_pad)
        x = layer_norm(self.out_proj(x))

        # GlobalAttentionPooling over valid tokens and registers.
        w = torch.softmax(self.gate(x).squeeze(-1).masked_fill(key_pad, float("-inf")), -1)
        pooled = (x * w[..., None]).sum(1)
        trk = x[:, :n]

        loss_jet = F.cross_entropy(self.jet_head(pooled), flavour)

        logits = self.origin_head(torch.cat([pooled[:, None].expand(b, n, -1), trk], -1))
        loss_origin = F.cross_entropy(logits.permute(0, 2, 1), origin.masked_fill(pad, -1), ignore_index=-1)

        valid = ~pad
        adj = valid[:, :, None] & valid[:, None, :] & ~torch.eye(n, dtype=torch.bool, device=pad.device)
        jet_i, i, j = adj.nonzero(as_tuple=True)
        edges = torch.cat([pooled[jet_i], trk[jet_i, i], trk[jet_i, j]], -1)
        edge_logits = self.vertex_head(edges).squeeze(-1)
        same = (vertex[:, :, None] == vertex[:, None, :]) & (vertex[:, :, None] >= 0) & (vertex[:, None, :] >= 0)
        target = same[adj].float()
        s = (origin >= 3) & (origin <= 5)
        s = s.long() - (origin == 1).long()
        edge_w = 1 + (s[:, :, None] & s[:, None, :])[adj]
        per_edge = F.binary_cross_entropy_with_logits(edge_logits, target, reduction="none")
        loss_vertex = (per_edge * edge_w).sum() / target.sum().clamp_min(1)

        return loss_jet + 0.5 * loss_origin + 1.5 * loss_vertex


def add_size_arguments(p):
    """The model's sizes and the random batch's shape, shared with gn2_packed.py."""
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--length", type=int, default=40)
    p.add_argument("--min-valid", type=int, default=5)
    p.add_argument("--max-valid", type=int, default=25)
    p.add_argument("--threads", type=int, default=0, help="0: torch's default")
    p.add_argument("--embed", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--out", type=int, default=128)
    p.add_argument("--task-hidden", default="128,64,32")
    p.add_argument("--jet-vars", type=int, default=2)
    p.add_argument("--track-vars", type=int, default=19)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_size_arguments(p)
    p.add_argument("--iters", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--precision", default="32", choices=["32", "bf16-mixed"])
    p.add_argument("--attention", default="math", choices=["math", "sdpa"],
                   help="sdpa: F.scaled_dot_product_attention (torch >= 2.0; else the math, said so)")
    p.add_argument("--optimizer", default="none", choices=["none", "adamw", "fused-adamw"],
                   help="include an AdamW step in the timed step (fused where this torch has it)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (torch >= 2.0)")
    a = p.parse_args()
    notes = []
    if a.attention == "sdpa":
        if hasattr(F, "scaled_dot_product_attention"):
            SelfAttention.sdpa = True
        else:
            notes.append("no F.scaled_dot_product_attention in this torch: math attention")
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    # Random batch first, in bench/model.cpp's order, so both see the same jets.
    b, n = a.batch, a.length
    n_valid = torch.randint(a.min_valid, a.max_valid + 1, (b,))
    pad = torch.arange(n)[None, :] >= n_valid[:, None]
    jets = torch.randn(b, a.jet_vars)
    tracks = torch.randn(b, n, a.track_vars).masked_fill(pad[..., None], 0.0)
    flavour = torch.randint(0, 4, (b,))
    origin = torch.randint(0, 8, (b, n))
    vertex = torch.randint(-1, 4, (b, n))

    hidden = [int(h) for h in a.task_hidden.split(",") if h]
    model = GN2(a.jet_vars, a.track_vars, a.embed, a.layers, a.heads, a.out, hidden)
    model.train()
    n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    device = torch.device(a.device)
    model.to(device)
    jets, tracks, pad, flavour, origin, vertex = (t.to(device) for t in (jets, tracks, pad, flavour, origin, vertex))

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    optimizer = None
    if a.optimizer != "none":
        kwargs = {}
        if a.optimizer == "fused-adamw" and device.type == "cuda":
            kwargs["fused"] = True
        try:
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, **kwargs)
        except (TypeError, RuntimeError) as e:
            notes.append(f"fused AdamW unavailable ({e}): plain AdamW")
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    forward = model
    if a.compile:
        if hasattr(torch, "compile"):
            forward = torch.compile(model)
        else:
            notes.append("no torch.compile in this torch: eager")

    def step():
        model.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=a.precision == "bf16-mixed"):
            loss = forward(jets, tracks, pad, flavour, origin, vertex)
        loss.backward()
        if optimizer is not None:
            optimizer.step()

    step()  # warm-up
    sync()
    t0 = time.perf_counter()
    for _ in range(a.iters):
        step()
    sync()
    dt = (time.perf_counter() - t0) / a.iters
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {n_valid.float().mean():.1f} valid tracks/jet"
          f", attention {a.attention}, optimizer {a.optimizer}{', compiled' if a.compile else ''}"
          + "".join(f"; {n}" for n in notes))
    print(f"RESULT params={n_params} sec_per_batch={dt:.4f} jets_per_s={b / dt:.1f}", flush=True)


if __name__ == "__main__":
    main()
