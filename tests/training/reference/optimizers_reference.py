"""Reference values for tests/training/optim/optimizers_test.cpp.

Written by hand from the update rules of lion_pytorch.Lion (lion_pytorch.py,
update_fn) and torch.optim.Muon (torch/optim/_muon.py, torch >= 2.9), driven by
torch's own OneCycleLR the way salt's configure_optimizers drives them; AdamW is
torch 1.13's torch.optim.AdamW. Nothing here calls salt-cpp.

Run: /usr/bin/python3 tests/training/reference/optimizers_reference.py
and paste the printed arrays into optimizers_test.cpp. The hybrid's weights depend
on torch's CPU bf16 rounding, which changed after 1.13: their torch 2.x reference
comes from trixie's torch 2.6 (/tmp/salt-torch2-python/python3, as
scripts/check_torch2.sh unpacks it); every other array is the same on both.
"""
import math

import torch

torch.set_default_dtype(torch.float64)

# model.lrs_config: initial, max, end, pct_start, weight_decay; 4 planned steps, 3 taken.
INITIAL, MAX, END, PCT, WD, TOTAL, STEPS = 0.01, 0.05, 0.001, 0.5, 0.1, 4, 3


def params():
    """layer.weight 3x2 (tall), proj.weight 2x4 (wide), layer.bias 3."""
    w1 = torch.tensor([[0.5, -0.3], [0.2, 0.8], [-0.6, 0.1]], requires_grad=True)
    w2 = torch.tensor([[0.1, -0.2, 0.3, -0.4], [0.5, 0.6, -0.7, 0.05]], requires_grad=True)
    b = torch.tensor([0.1, -0.2, 0.3], requires_grad=True)
    return [w1, w2, b]


def grads(t):
    """The fixed gradients of step t (0-based): base + t * delta."""
    base = [torch.tensor([[0.3, -0.1], [0.05, 0.2], [-0.4, 0.25]]),
            torch.tensor([[0.2, 0.1, -0.3, 0.05], [-0.15, 0.4, 0.1, -0.2]]),
            torch.tensor([0.2, -0.05, 0.1])]
    delta = [torch.tensor([[-0.5, 0.3], [0.2, -0.35], [0.45, 0.1]]),
             torch.tensor([[-0.3, 0.25, 0.4, -0.1], [0.2, -0.6, 0.05, 0.3]]),
             torch.tensor([-0.3, 0.12, -0.25])]
    return [b_ + t * d for b_, d in zip(base, delta)]


def one_cycle(opt, cycle_momentum):
    return torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=MAX, total_steps=TOTAL, div_factor=MAX / INITIAL,
                                               final_div_factor=INITIAL / END, pct_start=PCT,
                                               cycle_momentum=cycle_momentum)


class Lion(torch.optim.Optimizer):
    """lion_pytorch.Lion, decoupled_weight_decay=False (salt's use)."""

    def __init__(self, ps, lr, weight_decay, betas=(0.9, 0.99)):
        super().__init__(ps, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr, wd, (beta1, beta2) = group["lr"], group["weight_decay"], group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                m = state["exp_avg"]
                p.mul_(1 - lr * wd)
                p.add_(torch.sign(beta1 * m + (1 - beta1) * p.grad), alpha=-lr)
                m.mul_(beta2).add_(p.grad, alpha=1 - beta2)


def newton_schulz(g, bf16=True, a=3.4445, b=-4.775, c=2.0315, steps=5, eps=1e-7):
    """torch.optim.Muon's orthogonalisation: bf16, transposed when tall, Frobenius-normalised."""
    x = g.bfloat16() if bf16 else g.clone()
    tall = g.size(0) > g.size(1)
    if tall:
        x = x.T
    x = x / x.norm().clamp(min=eps)
    for _ in range(steps):
        gram = x @ x.T
        gram_update = b * gram + (c * gram) @ gram  # Python's left-to-right (c * G) @ G
        x = a * x + gram_update @ x
    return x.T if tall else x


def muon_step(p, buf, lr, wd, momentum=0.95, bf16=True):
    """torch.optim.Muon, nesterov, adjust_lr_fn="original"."""
    with torch.no_grad():
        buf.lerp_(p.grad, 1 - momentum)
        update = newton_schulz(p.grad.lerp(buf, momentum), bf16)
        rows, cols = p.shape
        p.mul_(1 - lr * wd)
        p.add_(update, alpha=-lr * math.sqrt(max(1, rows / cols)))


def run_lion():
    ps = params()
    opt = Lion(ps, lr=INITIAL, weight_decay=WD)
    sched = one_cycle(opt, True)  # cycles betas[0]: 0.95 -> 0.85 -> 0.95
    for t in range(STEPS):
        for p, g in zip(ps, grads(t)):
            p.grad = g.clone()
        opt.step()
        sched.step()
    return ps, [opt.state[p]["exp_avg"] for p in ps]


def run_hybrid(bf16=True):
    ps = params()
    wrapper = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=INITIAL, weight_decay=WD)
    sched = one_cycle(wrapper, False)  # salt: cycle_momentum=False for HybridMuonAdamW
    adamw = torch.optim.AdamW([ps[2]], lr=INITIAL, weight_decay=WD, betas=(0.9, 0.999), eps=1e-8)
    bufs = [torch.zeros_like(ps[0]), torch.zeros_like(ps[1])]
    for t in range(STEPS):
        for p, g in zip(ps, grads(t)):
            p.grad = g.clone()
        lr = wrapper.param_groups[0]["lr"]
        for p, buf in zip(ps[:2], bufs):
            muon_step(p, buf, lr, WD, bf16=bf16)
        adamw.param_groups[0]["lr"] = lr
        adamw.step()
        wrapper.step()  # no gradient: a no-op, as the wrapper's own step in salt
        sched.step()
    return ps, bufs, adamw.state[ps[2]]


def show(name, tensors):
    for i, x in enumerate(tensors):
        vals = ", ".join(repr(v) for v in x.detach().flatten().tolist())
        print(f"{name}[{i}] = {{{vals}}};")


if __name__ == "__main__":
    ps, ms = run_lion()
    show("lion_params", ps)
    show("lion_exp_avg", ms)
    ps, bufs, adam = run_hybrid()
    show("hybrid_params", ps)
    show("hybrid_momentum_buffer", bufs)
    show("hybrid_adamw_exp_avg_sq", [adam["exp_avg_sq"]])
    ps64, _, _ = run_hybrid(bf16=False)
    print("# Newton-Schulz in float64 instead of bf16 moves the weights by",
          max(float((a - b).abs().max()) for a, b in zip(ps, ps64)))
