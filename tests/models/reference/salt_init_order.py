"""salt's initial weights for GN2, DIPS, DL1 (tests/models/model_test_helpers.h's
configs) and a FiLM model (tests/models/salt_init_order_test.cpp's kFeaturewiseYaml), rebuilt with plain torch in the order salt builds them: jsonargparse
instantiates SaltModel's class-typed arguments first (the tasks in list order, the
encoder, the pooling), then SaltModel.__init__ builds the init nets. Each layer draws
as salt's modules do: nn.Linear's default reset_parameters; salt's Attention makes
its out_proj (one default init, its values thrown away), then xavier_uniform_ on
in_proj_weight, out_proj.reset_parameters() again, in_proj_bias zero; the
Transformer's registers torch.normal(zeros, std=1e-4) after its layers and
out_proj; Dropout and activations draw nothing at construction. SaltModel.__init__
builds its featurewise_nets first, each entry in list order (an `input` entry one net
per init net, replacing an earlier entry's nets after they drew; `encoder` one per
layer; `global` one), then the init nets.

Prints one line per parameter, `name numel checksum first last` (checksum: the sum of
the float32 bit patterns as integers, exact), then `next` and ten values of
torch.randperm(1000) drawn afterwards: where the generator stands for the batch order.
Usage: salt_init_order.py gn2|dips|dl1|featurewise SEED
"""
import sys

import torch
from torch import nn


def dense(prefix, sizes, dropout=False):
    """salt.models.Dense: per layer [Dropout] Linear [activation], not after the last."""
    out, index = [], 0
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        index += dropout
        lin = nn.Linear(a, b)
        out += [(f"{prefix}.net.{index}.weight", lin.weight), (f"{prefix}.net.{index}.bias", lin.bias)]
        index += 1 if i == len(sizes) - 2 else 2
    return out


def attention(prefix, d):
    w, b = nn.Parameter(torch.empty(3 * d, d)), nn.Parameter(torch.empty(3 * d))
    out = nn.Linear(d, d)
    nn.init.xavier_uniform_(w)
    out.reset_parameters()
    nn.init.constant_(b, 0.0)
    return [(f"{prefix}.in_proj_weight", w), (f"{prefix}.in_proj_bias", b),
            (f"{prefix}.out_proj.weight", out.weight), (f"{prefix}.out_proj.bias", out.bias)]


def linear(prefix, a, b):
    lin = nn.Linear(a, b)
    return [(f"{prefix}.weight", lin.weight), (f"{prefix}.bias", lin.bias)]


def encoder(layers, d, out):
    """salt's Transformer (norm LayerNorm, GLU not gated): its layers, out_proj, one register."""
    p = []
    for k in range(layers):
        layer = f"model.encoder.layers.{k}"
        p += attention(f"{layer}.attn.fn", d)
        p += linear(f"{layer}.dense.fn.in_proj", d, 2 * d)
        p += linear(f"{layer}.dense.fn.out_proj", 2 * d, d)
    p += linear("model.encoder.out_proj", d, out)
    p.append(("model.encoder.registers", torch.normal(torch.zeros((1, d)), std=1e-4)))
    return p


def gn2():
    d, out = 256, 128
    p = []
    p += dense("model.tasks.0.net", [out, 128, 64, 32, 4])
    p += dense("model.tasks.1.net", [out + out, 128, 64, 32, 8])
    p += dense("model.tasks.2.net", [2 * out + out, 128, 64, 32, 1])
    p += encoder(4, d, out)
    p += linear("model.pool_net.gate_nn", out, 1)
    p += dense("model.init_nets.0.net", [19 + 2, 256, d])
    return p


def dips():
    p = dense("model.tasks.0.net", [128, 128, 64, 32, 3], dropout=True)
    p += linear("model.pool_net.gate_nn", 128, 1)
    p += dense("model.init_nets.0.net", [21 + 2, 256, 128])
    return p


def dl1():
    p = dense("model.tasks.0.net", [64, 128, 3])
    p += dense("model.init_nets.0.net", [2, 128, 128, 128, 64])
    return p


def featurewise():
    e, out, params = 8, 6, 1
    p = dense("model.tasks.0.net", [out, 4, 4])
    p += encoder(2, e, out)
    p += linear("model.pool_net.gate_nn", out, 1)
    for _ in range(2):  # featurewise_nets[0], input: drawn, then replaced by [2]
        dense("replaced.bias_net", [params, 3, 5])
    p += dense("model.featurewise_global.scale_net", [params, 2, out])  # [1], global
    for i in range(2):  # [2], input: one per init net
        p += dense(f"model.init_nets.{i}.featurewise.scale_net", [params, 4, 5])
        p += dense(f"model.init_nets.{i}.featurewise.bias_net", [params, 4, 5])
    for k in range(2):  # [3], encoder: one per layer, torch's LayerNorm (no draws)
        p += dense(f"model.encoder.featurewise.{k}.bias_net", [params, 2 * params, e])  # hidden: 2 x input
        p += [(f"model.encoder.featurewise.{k}.norm.weight", torch.ones(e)),
              (f"model.encoder.featurewise.{k}.norm.bias", torch.zeros(e))]
    p += dense("model.init_nets.0.net", [2 + 3, 8, e])
    p += dense("model.init_nets.1.net", [2 + 3, 8, e])
    return p


def checksum(t):
    return int(t.detach().contiguous().view(torch.int32).to(torch.int64).sum())


torch.manual_seed(int(sys.argv[2]))
for name, t in {"gn2": gn2, "dips": dips, "dl1": dl1, "featurewise": featurewise}[sys.argv[1]]():
    flat = t.detach().flatten()
    print(name, flat.numel(), checksum(t), repr(flat[0].item()), repr(flat[-1].item()))
print("next", " ".join(str(v) for v in torch.randperm(1000)[:10].tolist()))
