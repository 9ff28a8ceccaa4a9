"""Trainable-parameter count of salt's model for configs/GN3v01/GN3V01.yaml.

Computed independently of salt-cpp (and without importing salt, which needs
lightning) from salt's module definitions, two ways:

  A. explicit formulas (pure Python), printed as a per-component breakdown;
  B. a torch mirror of salt's module tree (same attribute names, so the printed
     state-dict keys are salt's), summing p.numel() over named_parameters().

The script asserts that A == B. If PyYAML is available and the config file is
found, the sizes below are also re-derived from the YAML and asserted equal.

Run:
  /usr/bin/python3 tests/models/reference/gn3v01_param_count.py [--config PATH] [--keys]

Formula decisions (salt file:line, salt source: umami-hep/salt at 68bd045):
  * nn.Linear(i, o) = i*o + o (bias=True everywhere: Dense bias default
    models/dense.py:46,75; GLU bias default transformer.py:82,94-95; Attention
    bias default attention.py:255,284-286; Transformer.out_proj transformer.py:624;
    GlobalAttentionPooling.gate_nn pooling.py:28).
  * Dense node list = [input_size + context_size, *hidden_layers, output_size],
    one Linear per consecutive pair; activations/dropout have no parameters
    (dense.py:64-83); context is concatenated to the input (dense.py:92-93).
  * InitNet input size = len(variables[input_name]) + len(variables[global_object])
    (+ len(variables["parameters"]) which is absent here) (initnet.py:54-59).
    global_object is data.global_object, default "jets" (data/datasets.py:252,
    linked by utils/cli.py:126 and set on each init net at utils/cli.py:289-291).
    So the constituent inputs get the *jets* variables (2) attached, not
    "global" ("global" is mapped to the jets dataset too, datasets.py:269-270).
    (jets and global both have 2 variables here, so the sizes are +2 either way.)
  * "global" inputs (2 vars) are concatenated to the pooled vector:
    global_rep = cat([pool_out, inputs["global"]]) (saltmodel.py:175-176)
    -> 256 + 2 = 258 = config's pooled_dim.
  * RMSNorm(d): one weight of size d, no bias (models/layernorm.py:12-20).
    salt's LayerNorm has elementwise_affine=False -> 0 params (layernorm.py:5-9)
    (not used in this config, norm: RMSNorm).
  * norm_type "hybrid" (transformer.py:350-358): attention gets do_qk_norm and
    do_v_norm = True; residual norm type is "pre" for depth 0 and "none" for
    deeper layers; EncoderLayer.norm is nn.Identity (0 params) at depth 0 and
    RMSNorm(embed_dim) for deeper layers. NormResidual creates a norm only if
    its norm_type != "none" (transformer.py:222-223), so:
      depth 0:  attn.norm RMSNorm(512) + dense.norm RMSNorm(512) = 1024
      depth>0:  layer.norm RMSNorm(512)                           =  512
    (used in forward at transformer.py:421).
  * q/k/v norms: RMSNorm(head_dim) each, head_dim = 512/8 = 64, independent of
    the `norm` option (attention.py:267,277-281) -> 3*64 = 192 per layer.
  * Attention: in_proj_weight (3D, D) + in_proj_bias (3D) as raw Parameters,
    out_proj Linear(D, D) (attention.py:284-286).
  * GLU: hidden_dim defaults to 2*embed_dim = 1024 (transformer.py:89-90);
    gated -> in_proj Linear(D, 2*hidden) = Linear(512, 2048), out_proj
    Linear(hidden, D) = Linear(1024, 512) (transformer.py:94-95).
  * num_dense = 1 -> one GLU per layer (transformer.py:386-387); ls_init None ->
    LayerScale is Identity (transformer.py:224, EncoderLayer default 323);
    drop_path 0 -> Identity (transformer.py:225). No edge attention
    (edge_embed_dim 0, transformer.py:366-375).
  * Transformer: out_proj Linear(embed_dim, out_dim) since out_dim is given
    (transformer.py:581,623-624); final norm RMSNorm(out_dim=256) since
    do_final_norm defaults True (transformer.py:558,629-630); registers
    Parameter (num_registers, embed_dim) = (8, 512) (transformer.py:631-634);
    register_mask is a buffer (transformer.py:635). featurewise ModuleList empty.
  * GlobalAttentionPooling: gate_nn Linear(256, 1) (pooling.py:28).
  * Tasks: TaskBase.net = Dense(**dense_config) (task.py:54). Tasks whose
    input_name == global_object ("jets") get global_rep with context=None
    (saltmodel.py:216-217); others get context=global_rep (saltmodel.py:223-225),
    matching the config's context_size: 258.
    Vertexing: the edge feature is cat(x_i, x_j) of the 256-d track embeddings
    (2*256 = 512 = config input_size) and the context is ONE copy of global_rep
    per edge (context_matrix reassigned at task.py:895; the 2*context_d zeros at
    task.py:892-894 are discarded) -> first Linear in = 512 + 258 = 770.
  * Not parameters: InputNorm means/stds are register_buffer (inputnorm.py:86-87);
    loss class weights (CrossEntropyLoss(weight=...)) are buffers; register_mask
    buffer. MuP not configured; GLS loss mode adds no parameters
    (modelwrapper.py:136-142).
"""

from __future__ import annotations

import argparse
import os
import sys

DEFAULT_CONFIG = "/tmp/saltcfg/salt/configs/GN3v01/GN3V01.yaml"

# ---------------------------------------------------------------------------
# Sizes, as written in GN3V01.yaml
# ---------------------------------------------------------------------------
CFG = {
    "global_object": "jets",  # data.global_object not set -> default "jets"
    "num_vars": {"global": 2, "jets": 2, "tracks": 24, "flows": 5, "electrons": 28},
    "init_nets": [  # (input_name, hidden_layers, output_size)
        ("tracks", [512], 512),
        ("flows", [512], 512),
        ("electrons", [512], 512),
    ],
    "encoder": {
        "num_layers": 4,
        "embed_dim": 512,
        "out_dim": 256,
        "norm": "RMSNorm",
        "norm_type": "hybrid",
        "num_heads": 8,
        "gated": True,
        "num_registers": 8,
    },
    "pool_input_size": 256,
    # (name, input_name, input_size, context_size, hidden_layers, output_size)
    "tasks": [
        ("jets_classification", "jets", 258, 0, [128, 64, 32], 6),
        ("track_origin", "tracks", 256, 258, [128, 64, 32], 8),
        ("track_vertexing", "tracks", 512, 258, [128, 64, 32], 1),
        ("track_type", "tracks", 256, 258, [128, 64, 32], 6),
        ("jet_pt_regression", "jets", 258, 0, [128, 64, 32], 1),
        ("jets_charge", "jets", 258, 0, [128, 64, 32], 3),
    ],
}


def check_against_yaml(path: str) -> bool:
    """Re-derive CFG from the YAML file; assert equality. Returns False if skipped."""
    try:
        import yaml  # noqa: PLC0415
    except ImportError:
        return False
    if not os.path.exists(path):
        return False
    with open(path) as f:
        c = yaml.safe_load(f)  # PyYAML handles the anchors and `<<:` merge keys
    data = c["data"]
    assert data.get("global_object", "jets") == CFG["global_object"]
    assert {k: len(v) for k, v in data["variables"].items()} == CFG["num_vars"]
    m = c["model"]["model"]["init_args"]
    inits = [
        (n["input_name"], n["dense_config"]["hidden_layers"], n["dense_config"]["output_size"])
        for n in m["init_nets"]
    ]
    assert inits == CFG["init_nets"], inits
    e = m["encoder"]["init_args"]
    enc = {
        "num_layers": e["num_layers"],
        "embed_dim": e["embed_dim"],
        "out_dim": e["out_dim"],
        "norm": e["norm"],
        "norm_type": e["norm_type"],
        "num_heads": e["attn_kwargs"]["num_heads"],
        "gated": e["dense_kwargs"]["gated"],
        "num_registers": e["num_registers"],
    }
    assert enc == CFG["encoder"], enc
    assert m["encoder"]["class_path"] == "salt.models.Transformer"
    assert "ls_init" not in e and "drop_path" not in e and "num_dense" not in e
    assert "hidden_dim" not in e["dense_kwargs"] and "bias" not in e["dense_kwargs"]
    assert "do_final_norm" not in e and "edge_embed_dim" not in e
    assert m["pool_net"]["class_path"] == "salt.models.GlobalAttentionPooling"
    assert m["pool_net"]["init_args"]["input_size"] == CFG["pool_input_size"]
    assert "edge_init_nets" not in m and "featurewise_nets" not in m and "mask_decoder" not in m
    tasks = []
    for t in m["tasks"]["init_args"]["modules"]:
        a = t["init_args"]
        d = a["dense_config"]
        assert d.get("dropout", 0) == 0 and d.get("bias", True)
        tasks.append((
            a["name"], a["input_name"], d["input_size"], d.get("context_size", 0),
            d["hidden_layers"], d["output_size"],
        ))
    assert tasks == CFG["tasks"], tasks
    return True


# ---------------------------------------------------------------------------
# A. explicit formulas
# ---------------------------------------------------------------------------
def linear(i: int, o: int, bias: bool = True) -> int:
    return i * o + (o if bias else 0)


def rms_norm(d: int) -> int:
    return d  # weight only


def dense(input_size, hidden_layers, output_size, context_size=0):
    nodes = [input_size + context_size, *hidden_layers, output_size]
    return sum(linear(a, b) for a, b in zip(nodes[:-1], nodes[1:]))


def formula_breakdown(cfg=CFG):
    rows = []  # (component, count, note)
    nv = cfg["num_vars"]
    g = cfg["global_object"]

    # init nets
    for name, hidden, out in cfg["init_nets"]:
        in_size = nv[name] + nv[g]
        nodes = [in_size, *hidden, out]
        rows.append((
            f"init_nets[{name}]",
            dense(in_size, hidden, out),
            f"Dense {nodes}: " + " + ".join(f"Linear({a},{b})" for a, b in zip(nodes[:-1], nodes[1:])),
        ))

    # encoder
    e = cfg["encoder"]
    D, H = e["embed_dim"], e["num_heads"]
    hd = D // H
    hidden = 2 * D
    attn_in = 3 * D * D + 3 * D
    attn_out = linear(D, D)
    qkv_norm = 3 * rms_norm(hd)
    glu_in = linear(D, hidden * (2 if e["gated"] else 1))
    glu_out = linear(hidden, D)
    assert e["norm"] == "RMSNorm" and e["norm_type"] == "hybrid"
    for depth in range(e["num_layers"]):
        norms = 2 * rms_norm(D) if depth == 0 else rms_norm(D)
        norm_note = "attn.norm+dense.norm RMSNorm(512) x2" if depth == 0 else "layer.norm RMSNorm(512)"
        rows.append((f"encoder.layers[{depth}].attn.in_proj (W 3DxD + b 3D)", attn_in, f"{3*D}*{D}+{3*D}"))
        rows.append((f"encoder.layers[{depth}].attn.out_proj", attn_out, f"Linear({D},{D})"))
        rows.append((f"encoder.layers[{depth}].attn.q/k/v_norm", qkv_norm, f"3 x RMSNorm({hd})"))
        rows.append((f"encoder.layers[{depth}].dense(GLU).in_proj", glu_in, f"Linear({D},{2*hidden})"))
        rows.append((f"encoder.layers[{depth}].dense(GLU).out_proj", glu_out, f"Linear({hidden},{D})"))
        rows.append((f"encoder.layers[{depth}].norms", norms, norm_note))
    rows.append(("encoder.out_proj", linear(D, e["out_dim"]), f"Linear({D},{e['out_dim']})"))
    rows.append(("encoder.out_norm", rms_norm(e["out_dim"]), f"RMSNorm({e['out_dim']})"))
    rows.append(("encoder.registers", e["num_registers"] * D, f"Parameter({e['num_registers']},{D})"))

    # pooling
    p = cfg["pool_input_size"]
    rows.append(("pool_net.gate_nn", linear(p, 1), f"Linear({p},1)"))

    # tasks
    for name, _inp, in_size, ctx, hidden_l, out in cfg["tasks"]:
        nodes = [in_size + ctx, *hidden_l, out]
        rows.append((
            f"tasks[{name}]",
            dense(in_size, hidden_l, out, ctx),
            f"Dense {nodes} (input {in_size} + context {ctx})",
        ))
    return rows


def group_of(component: str) -> str:
    if component.startswith("encoder.layers["):
        return component.split("]")[0] + "]"
    if component.startswith("encoder."):
        return "encoder (other)"
    return component


# ---------------------------------------------------------------------------
# B. torch mirror of salt's module tree
# ---------------------------------------------------------------------------
def torch_mirror(cfg=CFG):
    import torch  # noqa: PLC0415
    from torch import nn  # noqa: PLC0415

    class RMSNorm(nn.Module):  # layernorm.py:12-20
        def __init__(self, dim):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))

    class Dense(nn.Module):  # dense.py
        def __init__(self, input_size, output_size, hidden_layers, context_size=0):
            super().__init__()
            nodes = [input_size + context_size, *hidden_layers, output_size]
            layers = []
            for i in range(len(nodes) - 1):
                layers.append(nn.Linear(nodes[i], nodes[i + 1]))
                if i != len(nodes) - 2:
                    layers.append(nn.SiLU())
            self.net = nn.Sequential(*layers)
            self.output_size = output_size

    class InitNet(nn.Module):  # initnet.py
        def __init__(self, input_name, variables, global_object, hidden, out):
            super().__init__()
            in_size = len(variables[input_name]) + len(variables[global_object])
            self.net = Dense(in_size, out, hidden)

    class Attention(nn.Module):  # attention.py:249-288
        def __init__(self, embed_dim, num_heads, do_qk_norm, do_v_norm):
            super().__init__()
            hd = embed_dim // num_heads
            if do_qk_norm:
                self.q_norm = RMSNorm(hd)
                self.k_norm = RMSNorm(hd)
            if do_v_norm:
                self.v_norm = RMSNorm(hd)
            self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
            self.in_proj_bias = nn.Parameter(torch.empty(3 * embed_dim))
            self.out_proj = nn.Linear(embed_dim, embed_dim)

    class GLU(nn.Module):  # transformer.py:76-97
        def __init__(self, embed_dim, gated):
            super().__init__()
            hidden = 2 * embed_dim
            self.in_proj = nn.Linear(embed_dim, hidden + hidden * gated)
            self.out_proj = nn.Linear(hidden, embed_dim)
            self.activation = nn.SiLU()

    class NormResidual(nn.Module):  # transformer.py:208-227
        def __init__(self, fn, norm_type, dim):
            super().__init__()
            self.fn = fn
            if norm_type != "none":
                self.norm = RMSNorm(dim)
            self.ls = nn.Identity()
            self.drop_path = nn.Identity()

    class EncoderLayer(nn.Module):  # transformer.py:319-391, norm_type hybrid
        def __init__(self, embed_dim, depth, num_heads, gated):
            super().__init__()
            residual_norm_type = "pre" if depth == 0 else "none"
            self.norm = nn.Identity() if depth == 0 else RMSNorm(embed_dim)
            self.attn = NormResidual(Attention(embed_dim, num_heads, True, True), residual_norm_type, embed_dim)
            self.dense = NormResidual(GLU(embed_dim, gated), residual_norm_type, embed_dim)

    class Transformer(nn.Module):  # transformer.py:551-636
        def __init__(self, num_layers, embed_dim, out_dim, num_heads, gated, num_registers, **_):
            super().__init__()
            self.layers = nn.ModuleList([EncoderLayer(embed_dim, d, num_heads, gated) for d in range(num_layers)])
            self.out_proj = nn.Linear(embed_dim, out_dim)
            self.out_norm = RMSNorm(out_dim)
            self.registers = nn.Parameter(torch.zeros(num_registers, embed_dim))
            self.register_buffer("register_mask", torch.zeros(num_registers, dtype=torch.bool))
            self.featurewise = nn.ModuleList()

    class GlobalAttentionPooling(nn.Module):  # pooling.py:26-28
        def __init__(self, input_size):
            super().__init__()
            self.gate_nn = nn.Linear(input_size, 1)

    class Task(nn.Module):  # task.py:42-56
        def __init__(self, input_size, context_size, hidden, out, loss):
            super().__init__()
            self.net = Dense(input_size, out, hidden, context_size)
            self.loss = loss

    class SaltModel(nn.Module):  # saltmodel.py:49-87
        def __init__(self, init_nets, tasks, encoder, pool_net):
            super().__init__()
            self.init_nets = nn.ModuleList(init_nets)
            self.edge_init_nets = None
            self.tasks = tasks
            self.encoder = encoder
            self.mask_decoder = None
            self.pool_net = pool_net

    class InputNorm(nn.Module):  # inputnorm.py:84-87: buffers only
        def __init__(self, nv):
            super().__init__()
            for k, n in nv.items():
                self.register_buffer(f"{k}_means", torch.zeros(n))
                self.register_buffer(f"{k}_stds", torch.ones(n))

    class ModelWrapper(nn.Module):  # modelwrapper.py: .model and .norm
        def __init__(self, model, norm):
            super().__init__()
            self.model = model
            self.norm = norm

    nv = cfg["num_vars"]
    variables = {k: [f"v{i}" for i in range(n)] for k, n in nv.items()}
    init_nets = [InitNet(n, variables, cfg["global_object"], h, o) for n, h, o in cfg["init_nets"]]
    encoder = Transformer(**cfg["encoder"])
    pool = GlobalAttentionPooling(cfg["pool_input_size"])
    class_dict_weights = {"jets_classification": 6, "track_origin": 8}  # use_class_dict: True
    tasks = []
    for name, _inp, in_size, ctx, hidden, out in cfg["tasks"]:
        if name == "track_vertexing":
            loss = nn.BCEWithLogitsLoss(reduction="none")
        elif name == "jet_pt_regression":
            loss = nn.L1Loss(reduction="none")
        elif name in class_dict_weights:
            loss = nn.CrossEntropyLoss(weight=torch.ones(class_dict_weights[name]))
        else:
            loss = nn.CrossEntropyLoss()
        tasks.append(Task(in_size, ctx, hidden, out, loss))
    model = SaltModel(init_nets, nn.ModuleList(tasks), encoder, pool)
    return ModelWrapper(model, InputNorm(nv))


# ---------------------------------------------------------------------------
def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default=DEFAULT_CONFIG)
    ap.add_argument("--keys", action="store_true", help="print every parameter/buffer key and shape")
    args = ap.parse_args()

    if check_against_yaml(args.config):
        print(f"sizes re-derived from {args.config}: OK")
    else:
        print(f"(config {args.config} not read; using embedded sizes)")

    rows = formula_breakdown()
    print("\nA. formula breakdown")
    w = max(len(r[0]) for r in rows)
    for comp, n, note in rows:
        print(f"  {comp:<{w}}  {n:>12,}   {note}")

    groups: dict[str, int] = {}
    for comp, n, _ in rows:
        groups[group_of(comp)] = groups.get(group_of(comp), 0) + n
    print("\n  per component:")
    for k, v in groups.items():
        print(f"  {k:<{w}}  {v:>12,}")
    sums = {
        "init_nets": sum(n for c, n, _ in rows if c.startswith("init_nets")),
        "encoder": sum(n for c, n, _ in rows if c.startswith("encoder")),
        "pool_net": sum(n for c, n, _ in rows if c.startswith("pool_net")),
        "tasks": sum(n for c, n, _ in rows if c.startswith("tasks")),
    }
    total_a = sum(n for _, n, _ in rows)
    assert total_a == sum(sums.values())
    print()
    for k, v in sums.items():
        print(f"  {k:<{w}}  {v:>12,}")
    print(f"  {'TOTAL (formulas)':<{w}}  {total_a:>12,}")

    try:
        import torch  # noqa: F401, PLC0415
    except ImportError:
        print("\nB. torch not available; skipped")
        return 0

    wrapper = torch_mirror()
    total_b = sum(p.numel() for p in wrapper.parameters() if p.requires_grad)
    print(f"\nB. torch mirror (torch {torch.__version__}): trainable params = {total_b:,}")
    sub = {
        "init_nets": wrapper.model.init_nets,
        "encoder": wrapper.model.encoder,
        "pool_net": wrapper.model.pool_net,
        "tasks": wrapper.model.tasks,
    }
    for k, mod in sub.items():
        n = sum(p.numel() for p in mod.parameters())
        print(f"  {k:<12} {n:>12,}  {'OK' if n == sums[k] else 'MISMATCH vs formulas ' + str(sums[k])}")
        assert n == sums[k], k
    for i, layer in enumerate(wrapper.model.encoder.layers):
        n = sum(p.numel() for p in layer.parameters())
        assert n == groups[f"encoder.layers[{i}]"], i
    nbuf = sum(b.numel() for b in wrapper.buffers())
    print(f"  buffers (not parameters): {nbuf} elements in {len(list(wrapper.buffers()))} tensors")
    if args.keys:
        for k, p in wrapper.named_parameters():
            print(f"  param  {k:<60} {tuple(p.shape)}")
        for k, b in wrapper.named_buffers():
            print(f"  buffer {k:<60} {tuple(b.shape)}")
    assert total_a == total_b, (total_a, total_b)
    print(f"\nTOTAL trainable parameters: {total_a:,} ({total_a})  [A == B]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
