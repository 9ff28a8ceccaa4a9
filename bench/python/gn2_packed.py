#!/usr/bin/env python3
"""A packed plain-PyTorch GN2 training step against the padded one of gn2_reference.py, timed interleaved.

The padded baseline (gn2_reference.py's GN2 with --attention sdpa, as bench_model runs it) computes on every slot of
[B, L + 1, D]: with --length 40 and 5..25 valid tracks that is 41 tokens per jet where about 16 carry a track, the
attention runs over 41 x 41 slots, and the vertexing pairs come from the padded adjacency. The packed model does the
work salt-cpp's step does, on the valid tokens only:
  - tokens: each jet's valid tracks followed by its register, concatenated jet by jet (about 16 per jet, not 41); the
    layout (cumulative sequence lengths, gathers, pairs) is built every step from the host-side valid counts, never
    from a device value, and copied to the device with one non_blocking copy;
  - attention: per jet over its own t = n + 1 tokens (t^2 scores, not 41^2), through the best varlen path of the
    running torch: torch.nn.attention.varlen.varlen_attn (CUDA, bf16), else nested jagged tensors with
    F.scaled_dot_product_attention, else a manual fallback (scatter into [B, max t, D], masked softmax, gather back);
  - heads: the first Linear of the track-origin and vertexing heads is factorised as salt-cpp's
    lib/models/layers/dense.cpp (forward_gathered) and lib/models/tasks/vertexing_task.cpp (edge_logits) do it.
    Origin: per jet pooled @ W_c^T + b, per track trk @ W_t^T, added at the track.
    Vertexing, W = [W_c | W_i | W_j]: per track
    [A | B] = trk @ [W_i; W_j]^T in one product, per jet P = pooled @ W_c^T + b added to the sender's term A once
    per track (not once per pair), then hidden = act((A + P[jet])[i] + B[j]) and the rest of the MLP on the pairs.
    So the first layer costs per track and per jet, the pairs (every ordered i != j of valid tracks of one jet,
    about n (n - 1) = 250 per jet) only pay for the gather-add and the later layers.
Losses are gn2_reference.py's (weights 1, 0.5, 1.5, the same ignore and edge-weight rules); the padded model's
state_dict loads into the packed one with strict=True (same modules, another forward).

FLOPs: "counted" is bench/model.cpp's gn2_step_flops ported (the valid tracks plus one register, every ordered pair,
the heads' first layers unfactorised; 3 x forward), the same for every variant; "executed" is what
torch.utils.flop_counter.FlopCounterMode sees over one eager forward + backward of the variant (attention added by
formula where the counter does not see the attention op, said so). MFU = FLOPs x steps/s / --peak-tflops.

Usage: python3 bench/python/gn2_packed.py [--device cuda] [--precision bf16-mixed] [--batch 1000] [--iters 20]
           [--rounds 3] [--variants padded-eager,padded-compiled,packed-eager,packed-compiled]
           [--packed-attention auto|varlen|nested|manual] [--peak-tflops 989]
       python3 bench/python/gn2_packed.py --check [--device cpu]   # packed == padded: loss and every gradient
Prints `RESULT variant=<name> jets_per_s=<median>` per variant that ran.
"""
import argparse
import copy
import inspect
import math
import os
import statistics
import sys
import time
import warnings

import torch
from torch import nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gn2_reference import GN2, SelfAttention, add_size_arguments, layer_norm  # noqa: E402

REGISTERS = 1  # GN2's default, as gn2_reference.py builds it
VARIANTS = ["padded-eager", "padded-compiled", "packed-eager", "packed-compiled"]


# ---------------------------------------------------------------- the batch and salt-cpp's FLOP count

def make_batch(a):
    """gn2_reference.py's random batch: the same generator calls after the seed, in its order."""
    torch.manual_seed(a.seed)
    b, n = a.batch, a.length
    n_valid = torch.randint(a.min_valid, a.max_valid + 1, (b,))
    pad = torch.arange(n)[None, :] >= n_valid[:, None]
    jets = torch.randn(b, a.jet_vars)
    tracks = torch.randn(b, n, a.track_vars).masked_fill(pad[..., None], 0.0)
    flavour = torch.randint(0, 4, (b,))
    origin = torch.randint(0, 8, (b, n))
    vertex = torch.randint(-1, 4, (b, n))
    return n_valid, dict(jets=jets, tracks=tracks, pad=pad, flavour=flavour, origin=origin, vertex=vertex)


def gn2_step_flops(batch, embed, layers, out, hidden):
    """bench/model.cpp's gn2_step_flops, line for line: its own seed-0 jets (5..25 valid), 21 input variables."""
    gen = torch.Generator().manual_seed(0)  # a fresh generator seeded 0 draws as torch::manual_seed(0) does
    n_valid = torch.randint(5, 26, (batch,), generator=gen).tolist()

    def mlp(n_in, n_out):  # 2 x multiply-adds of Dense(in, hidden..., out)
        f, prev = 0.0, n_in
        for h in hidden:
            f, prev = f + 2.0 * prev * h, h
        return f + 2.0 * prev * n_out

    d, o = float(embed), float(out)
    forward = 0.0
    for nv in n_valid:
        n = float(nv)
        t = n + 1  # + the register
        forward += n * (2.0 * 21 * d + 2.0 * d * d)  # init net [21 -> D -> D]
        forward += layers * (16.0 * t * d * d + 4.0 * t * t * d)  # qkv, scores, AV, out, dense 2D
        forward += 2.0 * t * d * o + 2.0 * t * o  # out_proj, pooling gate
        forward += mlp(out, 4) + n * mlp(2 * out, 8) + n * (n - 1) * mlp(3 * out, 1)  # the three heads
    return 3.0 * forward


# ---------------------------------------------------------------- the packed layout, from the host counts

def exclusive_cumsum(x):
    return torch.cat([x.new_zeros(1), x.cumsum(0)[:-1]])


def build_layout(n_valid, length, device, attention="manual"):
    """Every index the packed step needs, from the CPU counts only (no device value read), in one copy; what only
    one attention path reads (int32 offsets, the key mask) for that path only.

    Packed rows run jet by jet: the jet's n valid tracks (slots 0..n-1), then its register(s)."""
    b = n_valid.numel()
    jet = torch.arange(b)
    seq = n_valid + REGISTERS
    cu = torch.cat([seq.new_zeros(1), seq.cumsum(0)])
    tokens, max_seq = int(cu[-1]), int(seq.max())
    # Tracks: their jet, slot, packed row and their slot in the padded input.
    trk_jet = jet.repeat_interleave(n_valid)
    trk_off = exclusive_cumsum(n_valid)
    trk_pos = torch.arange(trk_jet.numel()) - trk_off[trk_jet]
    trk_row = cu[:-1][trk_jet] + trk_pos
    trk_src = trk_jet * length + trk_pos
    # Registers after each jet's tracks; `order` takes cat([tracks, registers]) to the packed order.
    reg_jet = jet.repeat_interleave(REGISTERS)
    reg_row = cu[:-1][reg_jet] + n_valid[reg_jet] + torch.arange(b * REGISTERS) % REGISTERS
    n_trk = trk_jet.numel()
    order = torch.empty(tokens, dtype=torch.long)
    order[trk_row] = torch.arange(n_trk)
    order[reg_row] = n_trk + torch.arange(b * REGISTERS)
    tok_jet = jet.repeat_interleave(seq)
    # Slot of each packed row in a [B, max_seq] view: the manual attention's scatter and gather.
    tok_pad = tok_jet * max_seq + torch.arange(tokens) - cu[:-1][tok_jet]
    # Vertexing pairs: every ordered (i, j), i != j, of one jet's valid tracks, in (jet, i, j) order as the padded
    # adjacency's nonzero gives them; as indices into the track rows.
    per_jet = n_valid * (n_valid - 1)
    pair_jet = jet.repeat_interleave(per_jet)
    k = torch.arange(pair_jet.numel()) - exclusive_cumsum(per_jet)[pair_jet]
    others = (n_valid[pair_jet] - 1).clamp_min(1)
    i = k // others
    r = k % others
    j = r + (r >= i).long()
    pair_i = trk_off[pair_jet] + i
    pair_j = trk_off[pair_jet] + j

    parts = dict(trk_src=trk_src, trk_jet=trk_jet, trk_row=trk_row, order=order, tok_jet=tok_jet, tok_pad=tok_pad,
                 pair_i=pair_i, pair_j=pair_j, cu=cu)
    flat = torch.cat(list(parts.values()))
    if device.type == "cuda":
        flat = flat.pin_memory()  # so that non_blocking really overlaps
    flat = flat.to(device, non_blocking=True)
    lay = dict(zip(parts, flat.split([p.numel() for p in parts.values()])))
    if attention == "varlen":
        lay["cu32"] = lay["cu"].int()  # flash's varlen kernels take int32 offsets
    if attention == "manual":  # built on the device from the copied offsets: no read
        lay["key_pad"] = torch.arange(max_seq, device=device)[None, :] >= (lay["cu"][1:] - lay["cu"][:-1])[:, None]
    lay.update(batch=b, tokens=tokens, max_seq=max_seq)
    return lay


# ---------------------------------------------------------------- attention on packed rows

def varlen_function():
    """(torch.nn.attention.varlen.varlen_attn, its extra keywords) when this torch has it with the expected
    signature (query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, ...), else None. Read once: the compiled step
    must not trace inspect."""
    global VARLEN
    if VARLEN is None:
        VARLEN = (None, {})
        try:
            from torch.nn.attention.varlen import varlen_attn
        except ImportError:
            return None
        params = inspect.signature(varlen_attn).parameters
        names = list(params)
        if names[:3] == ["query", "key", "value"] and len(names) >= 7:
            VARLEN = (varlen_attn, {"is_causal": False} if "is_causal" in params else {})
    return VARLEN[0]


VARLEN = None


def attend_varlen(q, k, v, lay):
    fn, kwargs = VARLEN
    out = fn(q, k, v, lay["cu32"], lay["cu32"], lay["max_seq"], lay["max_seq"], **kwargs)
    return out[0] if isinstance(out, tuple) else out


def attend_nested(q, k, v, lay):
    """Nested jagged tensors: [B, j, H, hd] -> SDPA over [B, H, j, hd] (flash / efficient on CUDA)."""
    extra = dict(min_seqlen=1, max_seqlen=lay["max_seq"]) if NESTED_SEQLEN else {}  # SDPA need not read the offsets
    # The math backend wants each nested input contiguous after the transpose: contiguous values.
    q, k, v = (torch.nested.nested_tensor_from_jagged(t.contiguous(), lay["cu"], **extra).transpose(1, 2)
               for t in (q, k, v))
    return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).values()


def attend_manual(q, k, v, lay):
    """Scatter the packed rows into [B, max t], masked softmax, gather back (any torch, 1.13 included)."""
    b, m = lay["batch"], lay["max_seq"]
    heads, hd = q.shape[1:]

    def padded(t):
        full = t.new_zeros(b * m, heads, hd).index_copy(0, lay["tok_pad"], t)
        return full.view(b, m, heads, hd).transpose(1, 2)

    qp, kp, vp = padded(q), padded(k), padded(v)
    scores = (qp @ kp.transpose(-2, -1) / math.sqrt(hd)).masked_fill(lay["key_pad"][:, None, None, :], float("-inf"))
    out = (torch.softmax(scores, -1) @ vp).transpose(1, 2).reshape(b * m, heads, hd)
    return out.index_select(0, lay["tok_pad"])


# Whether nested_tensor_from_jagged takes the lengths' bounds (known on the host here), read once.
NESTED_SEQLEN = hasattr(torch.nested, "nested_tensor_from_jagged") and \
    "max_seqlen" in inspect.signature(torch.nested.nested_tensor_from_jagged).parameters

ATTEND = {"varlen": attend_varlen, "nested": attend_nested, "manual": attend_manual}


def probe(path, device, dtype):
    """Empty when `path` runs forward and backward here on a small ragged batch, else why not."""
    if path == "varlen" and varlen_function() is None:
        return "no torch.nn.attention.varlen.varlen_attn"
    if path == "nested" and not hasattr(torch.nested, "nested_tensor_from_jagged"):
        return "no torch.nested.nested_tensor_from_jagged"
    try:
        lay = build_layout(torch.tensor([3, 5]), 8, device, path)
        x = torch.randn(lay["tokens"], 3 * 32, device=device, dtype=dtype, requires_grad=True)
        q, k, v = (t.view(lay["tokens"], 2, 16) for t in x.chunk(3, -1))
        out = ATTEND[path](q, k, v, lay)
        ref = attend_manual(q.float(), k.float(), v.float(), build_layout(torch.tensor([3, 5]), 8, device))
        if (out.float() - ref).abs().max().item() > 0.05:
            return "disagrees with the manual attention"
        out.float().sum().backward()
    except Exception as e:  # noqa: BLE001 -- any failure means: take the next path
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return ""


def choose_attention(wanted, device, dtype):
    """The first of varlen, nested, manual that works here (or the one asked for), and why the others did not."""
    notes = []
    for path in ([wanted] if wanted != "auto" else ["varlen", "nested", "manual"]):
        why = probe(path, device, dtype)
        if not why:
            return path, notes
        notes.append(f"{path}: {why}")
    raise SystemExit(f"packed attention {wanted} unavailable: {'; '.join(notes)}")


# ---------------------------------------------------------------- the packed model

class PackedGN2(GN2):
    """gn2_reference.GN2's modules and parameters (its state_dict loads strictly), a forward on packed rows."""

    def __init__(self, *args, attention="manual", **kwargs):
        super().__init__(*args, **kwargs)
        self.attention = attention

    def attend(self, attn, x, lay):
        t, d = x.shape
        q, k, v = (z.view(t, attn.heads, d // attn.heads) for z in
                   F.linear(x, attn.in_proj_weight, attn.in_proj_bias).chunk(3, -1))
        return attn.out_proj(ATTEND[self.attention](q, k, v, lay).reshape(t, d))

    def pool(self, x, lay):
        """GlobalAttentionPooling as a softmax per jet over its tokens (segment sums by index_add)."""
        jet = lay["tok_jet"]
        g = self.gate(x).squeeze(-1).float()
        top = x.new_full((lay["batch"],), float("-inf"), dtype=g.dtype)
        top = top.scatter_reduce(0, jet, g.detach(), "amax")  # only for stability: no gradient through it
        e = torch.exp(g - top[jet])
        w = e / e.new_zeros(lay["batch"]).index_add(0, jet, e)[jet]
        xw = x * w[:, None].to(x.dtype)
        return xw.new_zeros(lay["batch"], x.shape[1]).index_add(0, jet, xw)

    def origin_logits(self, pooled, trk, lay):
        """The origin head's first Linear split [W_c | W_t] as salt-cpp's Dense::forward_gathered does."""
        first, c = self.origin_head[0], pooled.shape[1]
        ctx = F.linear(pooled, first.weight[:, :c], first.bias)  # per jet
        return self.origin_head[1:](F.linear(trk, first.weight[:, c:]) + ctx.index_select(0, lay["trk_jet"]))

    def edge_logits(self, pooled, trk, lay):
        """The vertexing head's first Linear split [W_c | W_i | W_j] as salt-cpp's VertexingTask::edge_logits."""
        first, c = self.vertex_head[0], pooled.shape[1]
        w = first.weight
        hidden = w.shape[0]
        p = F.linear(trk, torch.cat([w[:, c:2 * c], w[:, 2 * c:]], 0))  # per track [W_i x | W_j x], one product
        p_i, p_j = p[:, :hidden], p[:, hidden:]
        p_i = p_i + F.linear(pooled, w[:, :c], first.bias).index_select(0, lay["trk_jet"])  # per jet, once per track
        h = p_i.index_select(0, lay["pair_i"]) + p_j.index_select(0, lay["pair_j"])
        return self.vertex_head[1:](h).squeeze(-1)

    def forward(self, jets, tracks, flavour, origin, vertex, lay):
        b, n_reg = lay["batch"], self.registers.shape[0]
        trk_in = tracks.reshape(-1, tracks.shape[-1]).index_select(0, lay["trk_src"])
        h = self.init_net(torch.cat([jets.index_select(0, lay["trk_jet"]), trk_in], -1))
        regs = self.registers.expand(b, n_reg, -1).reshape(b * n_reg, -1)
        x = torch.cat([h, regs], 0).index_select(0, lay["order"])
        for layer in self.layers:
            x = x + self.attend(layer.attn, layer_norm(x), lay)
            x = x + layer.dense(layer_norm(x))
        x = layer_norm(self.out_proj(x))
        pooled = self.pool(x, lay)
        trk = x.index_select(0, lay["trk_row"])

        loss_jet = F.cross_entropy(self.jet_head(pooled), flavour)
        org = origin.reshape(-1).index_select(0, lay["trk_src"])
        loss_origin = F.cross_entropy(self.origin_logits(pooled, trk, lay), org)

        vtx = vertex.reshape(-1).index_select(0, lay["trk_src"])
        vi, vj = vtx.index_select(0, lay["pair_i"]), vtx.index_select(0, lay["pair_j"])
        target = ((vi == vj) & (vi >= 0) & (vj >= 0)).float()
        s = ((org >= 3) & (org <= 5)).long() - (org == 1).long()  # the reference's bitwise & of -1/0/1 included
        edge_w = 1 + (s.index_select(0, lay["pair_i"]) & s.index_select(0, lay["pair_j"]))
        per_edge = F.binary_cross_entropy_with_logits(self.edge_logits(pooled, trk, lay), target, reduction="none")
        loss_vertex = (per_edge * edge_w).sum() / target.sum().clamp_min(1)
        return loss_jet + 0.5 * loss_origin + 1.5 * loss_vertex


# ---------------------------------------------------------------- variants

class Variant:
    """One model, its optimizer and its step; `loss_args` builds the forward's arguments (the layout inside)."""

    def __init__(self, name, model, forward, loss_args, device, precision):
        self.name, self.model, self.forward, self.loss_args = name, model, forward, loss_args
        self.device, self.precision = device, precision
        kwargs = {"fused": True} if device.type == "cuda" else {}
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, **kwargs)
        self.failed = None
        self.rates = []
        self.executed = None  # (FLOPs, note)

    def loss(self, forward=None):
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.precision == "bf16-mixed"):
            return (forward or self.forward)(*self.loss_args())

    def step(self):
        self.optimizer.zero_grad(set_to_none=True)
        self.loss().backward()
        self.optimizer.step()


def make_variants(a, base, batch, n_valid, device, attention):
    hidden = [int(h) for h in a.task_hidden.split(",") if h]
    out = {}
    for name in a.variants.split(","):
        if name not in VARIANTS:
            raise SystemExit(f"unknown variant {name!r}: one of {','.join(VARIANTS)}")
        if name.startswith("padded"):
            model = copy.deepcopy(base)
            args = (lambda: (batch["jets"], batch["tracks"], batch["pad"], batch["flavour"], batch["origin"],
                             batch["vertex"]))
        else:
            model = PackedGN2(a.jet_vars, a.track_vars, a.embed, a.layers, a.heads, a.out, hidden, attention=attention)
            model.load_state_dict(base.state_dict(), strict=True)

            def args(model=model):  # the layout is part of the step, as in salt-cpp; for the model's attention path
                return (batch["jets"], batch["tracks"], batch["flavour"], batch["origin"], batch["vertex"],
                        build_layout(n_valid, a.length, device, model.attention))
        model.to(device).train()
        forward = model
        if name.endswith("compiled"):
            forward = torch.compile(model, backend=a.compile_backend) if hasattr(torch, "compile") else None
        out[name] = Variant(name, model, forward, args, device, a.precision)
        if forward is None:
            out[name].failed = "no torch.compile in this torch"
    return out


def first_line(e):
    """The error's first line; for torch.compile's wrapper (`backend='inductor' raised:`) the cause's first line."""
    lines = [line.strip() for line in f"{type(e).__name__}: {e}".splitlines() if line.strip()]
    for k, line in enumerate(lines[:-1]):
        if line.endswith("raised:"):
            return f"{line} {lines[k + 1]}"
    return lines[0] if lines else type(e).__name__


# ---------------------------------------------------------------- FLOPs executed

def attention_formula(lengths, embed, layers):
    """Forward + backward attention FLOPs over sequences of these lengths: 4 t^2 D per layer forward, x 3."""
    return 3.0 * layers * 4.0 * embed * float((lengths.double() ** 2).sum())


def count_flops(v):
    """FlopCounterMode over one eager forward + backward: (total, {op name: FLOPs}) of the ops it counts."""
    from torch.utils.flop_counter import FlopCounterMode
    counter = FlopCounterMode(display=False)
    v.optimizer.zero_grad(set_to_none=True)
    with counter:
        v.loss(forward=v.model).backward()
    v.optimizer.zero_grad(set_to_none=True)
    ops = {str(op): float(n) for op, n in counter.get_flop_counts().get("Global", {}).items()}
    return float(counter.get_total_flops()), ops


def executed_flops(v, a, lengths):
    """FLOPs of one eager forward + backward as FlopCounterMode counts them, with the attention by formula where
    it does not see the attention op (or cannot follow the nested tensors): (FLOPs, note) or (None, why)."""
    try:
        import torch.utils.flop_counter  # noqa: F401
    except ImportError:
        return None, "no torch.utils.flop_counter"
    formula = attention_formula(lengths, a.embed, a.layers)
    try:
        total, ops = count_flops(v)
    except Exception as e:  # noqa: BLE001 -- e.g. nested tensors' irregular sizes in the counter's shape formulas
        if getattr(v.model, "attention", "manual") == "manual":
            raise
        # The same step with the manual attention: everything but the attention's batched products is the same
        # work; those products (over [B, max t]) are replaced by the formula over each jet's own t.
        path, v.model.attention = v.model.attention, "manual"
        try:
            total, ops = count_flops(v)
        finally:
            v.model.attention = path
        bmm = sum(n for op, n in ops.items() if "bmm" in op)
        return total - bmm + formula, f"attention by formula: the counter fails on {path} ({first_line(e)})"
    if any(word in op for op in ops for word in ("attention", "attn", "bmm")):  # counted ops only are listed
        return total, ""
    return total + formula, "attention by formula: not counted"


# ---------------------------------------------------------------- check and benchmark

def check(a, device):
    """Packed == padded on a tiny float32 batch: the loss within 1e-5 relative, every gradient and the origin and
    edge logits within 1e-4."""
    a.batch, a.precision = 7, "32"
    n_valid, batch = make_batch(a)
    hidden = [int(h) for h in a.task_hidden.split(",") if h]
    padded = GN2(a.jet_vars, a.track_vars, a.embed, a.layers, a.heads, a.out, hidden)
    attention, notes = choose_attention(a.packed_attention, device, torch.float32)
    packed = PackedGN2(a.jet_vars, a.track_vars, a.embed, a.layers, a.heads, a.out, hidden, attention=attention)
    packed.load_state_dict(padded.state_dict(), strict=True)
    batch = {k: t.to(device) for k, t in batch.items()}
    padded.to(device), packed.to(device)
    heads = {}  # the heads' last layers run in both forwards: their outputs side by side
    for tag, model in (("padded", padded), ("packed", packed)):
        for head in ("origin_head", "vertex_head"):
            getattr(model, head)[-1].register_forward_hook(
                lambda mod, inp, out, key=(tag, head): heads.__setitem__(key, out.detach()))
    loss_padded = padded(batch["jets"], batch["tracks"], batch["pad"], batch["flavour"], batch["origin"],
                         batch["vertex"])
    loss_packed = packed(batch["jets"], batch["tracks"], batch["flavour"], batch["origin"], batch["vertex"],
                         build_layout(n_valid, a.length, device, attention))
    loss_padded.backward()
    loss_packed.backward()
    rel = abs(loss_packed.item() - loss_padded.item()) / abs(loss_padded.item())
    grads = dict(packed.named_parameters())
    diffs = {name: (p.grad - grads[name].grad).abs().max().item() for name, p in padded.named_parameters()}
    # The vertexing loss sums over both orders of every pair with symmetric targets and weights, so the loss and the
    # gradients cannot see the pair's two tracks exchanged (W_i for W_j); each edge's logit can.
    valid = ~batch["pad"]
    diffs["origin logits"] = (heads["padded", "origin_head"][valid] - heads["packed", "origin_head"]).abs().max().item()
    diffs["edge logits"] = (heads["padded", "vertex_head"] - heads["packed", "vertex_head"]).abs().max().item()
    worst = max(diffs, key=diffs.get)
    where = (f"torch {torch.__version__}, {device}, packed attention {attention}, padded "
             f"{'sdpa' if SelfAttention.sdpa else 'math'}" + "".join(f"; {n}" for n in notes))
    if rel > 1e-5 or diffs[worst] > 1e-4:
        print(f"check: FAILED ({where}): loss padded {loss_padded.item():.8f} packed {loss_packed.item():.8f} "
              f"(relative {rel:.2e}), max diff {diffs[worst]:.2e} at {worst}")
        sys.exit(1)
    print(f"check: ok (loss {loss_packed.item():.6f}, relative diff {rel:.1e}, max grad/logit diff "
          f"{diffs[worst]:.1e} at {worst}; {where})")


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def time_round(v, iters, batch_size):
    sync(v.device)
    t0 = time.perf_counter()
    for _ in range(iters):
        v.step()
    sync(v.device)
    return batch_size * iters / (time.perf_counter() - t0)


def benchmark(a, device):
    n_valid, batch = make_batch(a)
    hidden = [int(h) for h in a.task_hidden.split(",") if h]
    base = GN2(a.jet_vars, a.track_vars, a.embed, a.layers, a.heads, a.out, hidden)  # after the batch, as the ref
    batch = {k: t.to(device) for k, t in batch.items()}
    dtype = torch.bfloat16 if a.precision == "bf16-mixed" else torch.float32
    attention, notes = choose_attention(a.packed_attention, device, dtype)
    variants = make_variants(a, base, batch, n_valid, device, attention)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"{name}, torch {torch.__version__}, precision {a.precision}, batch {a.batch}, length {a.length}, "
          f"{n_valid.float().mean():.1f} valid tracks/jet, {torch.get_num_threads()} threads; padded attention "
          f"{'sdpa' if SelfAttention.sdpa else 'math'}, packed attention {attention}, compile backend {a.compile_backend}"
          + "".join(f" ({n})" for n in notes), flush=True)

    counted = gn2_step_flops(a.batch, a.embed, a.layers, a.out, hidden)
    lengths = {"padded": torch.full((a.batch,), a.length + REGISTERS), "packed": n_valid + REGISTERS}
    for v in variants.values():
        if v.failed:
            continue
        try:
            t0 = time.perf_counter()
            for _ in range(2):  # compile and warm up: the caching allocator and the kernels' choices settle
                v.step()
            sync(device)
            warm = time.perf_counter() - t0
            if v.name.endswith("eager"):
                v.executed = executed_flops(v, a, lengths[v.name.split("-")[0]])
            print(f"  {v.name}: warm-up {warm:.1f} s", flush=True)
        except Exception as e:  # noqa: BLE001 -- one variant's failure leaves the others running
            v.failed = first_line(e)
    for twin in ("padded", "packed"):  # the compiled variant's executed FLOPs: its eager twin's count
        if f"{twin}-compiled" in variants:
            eager = variants.get(f"{twin}-eager")
            if eager is None or eager.executed is None:
                eager = variants[f"{twin}-compiled"]
                try:
                    fl, note = executed_flops(eager, a, lengths[twin])
                except Exception as e:  # noqa: BLE001
                    fl, note = None, first_line(e)
                variants[f"{twin}-compiled"].executed = (fl, "eager twin" + (f", {note}" if note else ""))
            else:
                fl, note = eager.executed
                variants[f"{twin}-compiled"].executed = (fl, "eager twin's count" + (f", {note}" if note else ""))

    for _ in range(a.rounds):
        for v in variants.values():
            if v.failed:
                continue
            try:
                v.rates.append(time_round(v, a.iters, a.batch))
            except Exception as e:  # noqa: BLE001
                v.failed = first_line(e)

    print(f"counted model FLOPs (gn2_step_flops): {counted / 1e12:.3f} TFLOP/step; peak {a.peak_tflops:g} TFLOP/s")
    medians = {}
    for v in variants.values():
        if v.failed:
            print(f"  {v.name}: failed: {v.failed}")
            continue
        med = statistics.median(v.rates)
        medians[v.name] = med
        steps = med / a.batch
        peak = a.peak_tflops * 1e12
        fl, note = v.executed if v.executed else (None, "not counted")
        executed = (f"executed {fl / 1e12:.3f} TFLOP/step{f' ({note})' if note else ''}" if fl is not None
                    else f"executed n/a ({note})")
        mfu_exec = f"{100 * fl * steps / peak:.2f} %" if fl is not None else "n/a"
        print(f"  {v.name}: {med:.0f} jets/s median ({min(v.rates):.0f}..{max(v.rates):.0f} over {len(v.rates)} "
              f"rounds), {executed}, MFU counted {100 * counted * steps / peak:.2f} %, executed {mfu_exec}")
    ratios = [f"{kind} {medians[f'packed-{kind}'] / medians[f'padded-{kind}']:.2f}x" for kind in ("eager", "compiled")
              if f"packed-{kind}" in medians and f"padded-{kind}" in medians]
    if ratios:
        print("packed/padded jets/s: " + ", ".join(ratios))
    for name, med in medians.items():
        print(f"RESULT variant={name} jets_per_s={med:.1f}")


def main():
    warnings.filterwarnings("ignore", message="scatter_reduce.*beta")  # torch 1.13's note on the pooling's max
    warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")  # the CPU math path's note
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_size_arguments(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--precision", default="32", choices=["32", "bf16-mixed"])
    p.add_argument("--iters", type=int, default=20, help="steps per variant per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--packed-attention", default="auto", choices=["auto", "varlen", "nested", "manual"])
    p.add_argument("--compile-backend", default="inductor",
                   help="torch.compile's backend; aot_eager traces as inductor does without compiling C++ (a dry run)")
    p.add_argument("--peak-tflops", type=float, default=989.0, help="H100/H200 bf16 dense peak")
    p.add_argument("--check", action="store_true", help="packed == padded (loss, gradients) on a tiny batch, exit")
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    SelfAttention.sdpa = hasattr(F, "scaled_dot_product_attention")  # --attention sdpa, as bench_model runs it
    device = torch.device(a.device)
    if a.check:
        check(a, device)
    else:
        benchmark(a, device)


if __name__ == "__main__":
    main()
