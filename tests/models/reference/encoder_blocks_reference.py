"""Reference values for tests/models/layers/encoder_blocks_test.cpp, computed with
/usr/bin/python3's torch 1.13 from salt's definitions (salt/models/layernorm.py
RMSNorm, transformer.py LayerScale/DropPath/NormResidual/EncoderLayer with
norm_type hybrid, attention.py q/k/v norms), written out here independently of
salt-cpp. Run: /usr/bin/python3 tests/models/reference/encoder_blocks_reference.py
"""
import math

import torch
import torch.nn.functional as F


def rms_norm(x, weight, eps=1e-5):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * weight


def fill(name, shape):
    """The deterministic value the C++ test writes into parameter `name`."""
    h = sum(ord(c) for c in name) % 97
    n = math.prod(shape)
    return (0.3 * torch.sin(0.7 * torch.arange(n, dtype=torch.float64) + 0.13 * h)).float().view(shape)


def attention(p, pre, x, mask, heads):
    b, s, d = x.shape
    hd = d // heads
    qkv = F.linear(x, p[pre + "in_proj_weight"], p[pre + "in_proj_bias"])
    q, k, v = (t.view(b, s, heads, hd).transpose(1, 2) for t in qkv.chunk(3, -1))
    q, k = rms_norm(q, p[pre + "q_norm.weight"]), rms_norm(k, p[pre + "k_norm.weight"])
    v = rms_norm(v, p[pre + "v_norm.weight"])
    scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
    scores = scores.masked_fill(mask[:, None, None, :], float("-inf"))
    out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d)
    return F.linear(out, p[pre + "out_proj.weight"], p[pre + "out_proj.bias"])


def glu(p, pre, x):
    h = F.linear(x, p[pre + "in_proj.weight"], p[pre + "in_proj.bias"])
    a, g = h.chunk(2, -1)
    return F.linear(F.silu(a) * g, p[pre + "out_proj.weight"], p[pre + "out_proj.bias"])


def hybrid_layer(p, x, mask, depth, heads):
    # NormResidual: "pre" at depth 0 (RMSNorm, then LayerScale), "none" deeper.
    def residual(name, fn, x):
        inner = rms_norm(x, p[name + ".norm.weight"]) if depth == 0 else x
        return x + fn(inner) * p[name + ".ls.gamma"]

    x = residual("attn", lambda t: attention(p, "attn.fn.", t, mask, heads), x)
    if depth > 0:
        x = rms_norm(x, p["norm.weight"])
    return residual("dense", lambda t: glu(p, "dense.fn.", t), x)


def params(depth, d=4, hidden=8):
    shapes = {
        "attn.fn.in_proj_weight": (3 * d, d), "attn.fn.in_proj_bias": (3 * d,),
        "attn.fn.out_proj.weight": (d, d), "attn.fn.out_proj.bias": (d,),
        "attn.fn.q_norm.weight": (2,), "attn.fn.k_norm.weight": (2,), "attn.fn.v_norm.weight": (2,),
        "attn.ls.gamma": (d,), "dense.ls.gamma": (d,),
        "dense.fn.in_proj.weight": (2 * hidden, d), "dense.fn.in_proj.bias": (2 * hidden,),
        "dense.fn.out_proj.weight": (d, hidden), "dense.fn.out_proj.bias": (d,),
    }
    if depth == 0:
        shapes.update({"attn.norm.weight": (d,), "dense.norm.weight": (d,)})
    else:
        shapes["norm.weight"] = (d,)
    return {k: fill(k, s) for k, s in shapes.items()}


def show(name, t):
    print(f"// {name} {list(t.shape)}")
    print("{" + ", ".join(f"{v:.7g}f" for v in t.flatten().tolist()) + "}")


x = torch.linspace(-1.5, 2.0, 24).view(2, 3, 4)
show("rms_norm", rms_norm(x, torch.tensor([1.0, 0.5, 2.0, -1.0])))

torch.manual_seed(7)
keep = 1 - 0.5
mask = (keep + torch.rand((3, 1, 1))).floor_()
show("drop_path", torch.arange(12.0).view(3, 2, 2).div(keep) * mask)

xe = torch.linspace(-1.0, 1.2, 12).view(1, 3, 4)
pad = torch.tensor([[False, False, True]])
for depth in (0, 1):
    show(f"hybrid depth {depth} (tokens 0, 1)", hybrid_layer(params(depth), xe, pad, depth, heads=2)[0, :2])
