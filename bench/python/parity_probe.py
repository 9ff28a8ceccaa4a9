"""A Lightning callback that records what salt's own `salt fit` does, step by step,
for bench/train_parity.sh and tests/fixtures/salt_training (salt-cpp's side comes
from its run directory: metrics.csv, checkpoints).

Written to $PARITY_PROBE_DIR (data parallel: rank r > 0 to $PARITY_PROBE_DIR_rank<r>,
the losses in callback_metrics then the mean over ranks, "train/loss" the rank's own):
  init.pt      the model's state_dict when training starts (salt's initial weights)
  rng_at_train_start.pt  torch's CPU generator state then (before any loader draws)
  train_start.json  the batch size the fit trains with (a BatchSizeFinder's, if any)
  lr_find.json the LearningRateFinder's sweep, if one ran: its learning rates and
               smoothed losses (Lightning keeps them in memory only)
  steps.jsonl  one line per training batch: epoch, step, the batch's first jet
               (the slice RandomBatchSampler gave), lr and beta1 of the step, the
               loss and each task's loss, the gradients' total magnitude as salt's
               GradientLoggerCallback sums it (the sum of each parameter's L2 norm)
               and their global L2 norm; at step 0 also each parameter's gradient std
  val.jsonl    one line per validation: epoch, step, salt's val/* metrics
  final.pt     state_dict and optimizer state (AdamW's step, exp_avg, exp_avg_sq
               per parameter) when training ends

Imported first by bench/python/salt_main.py (salt's command with this module loaded),
before salt builds its model and its data module makes its samplers: the sampler's
__iter__ is wrapped here.
"""

import json
import os
from collections import deque
from pathlib import Path

import torch
from lightning import Callback
from lightning.fabric.utilities.distributed import DistributedSamplerWrapper

from salt.data import samplers
from salt.models import matcher

_train_slices: deque = deque()
_plain_iter = samplers.RandomBatchSampler.__iter__
_plain_dist_iter = DistributedSamplerWrapper.__iter__


def _recording_iter(self):
    # A new training iterator: what an earlier one listed and no batch took is gone
    # (a tuner's trial, a reload: Lightning's tuners iterate before the fit's epochs).
    if self.drop_last and not getattr(self, "_listed_by_wrapper", False):
        _train_slices.clear()
    for s in _plain_iter(self):
        # the training sampler (salt: drop_last = stage == "fit"), unless Lightning's
        # data-parallel wrapper lists it whole (that one records its rank's share)
        if self.drop_last and not getattr(self, "_listed_by_wrapper", False):
            _train_slices.append(int(s.start))
        yield s


def _recording_dist_iter(self):
    sampler = self.dataset._sampler
    sampler._listed_by_wrapper = True
    listed = _plain_dist_iter(self)  # lists the whole epoch now, as Lightning does
    if not sampler.drop_last:
        return listed

    def rank_share():
        for s in listed:
            _train_slices.append(int(s.start))
            yield s

    return rank_share()


samplers.RandomBatchSampler.__iter__ = _recording_iter
DistributedSamplerWrapper.__iter__ = _recording_dist_iter

# salt's matcher defaults to py-lap-solver's compiled BatchedScipyOMP; where only its
# pure-scipy solvers are installed (scripts/salt_site.py), scipy's
# linear_sum_assignment stands in: the same exact assignment.
if "BatchedScipyOMP" not in matcher.SOLVER_REGISTRY and "Scipy" in matcher.SOLVER_REGISTRY:
    matcher.SOLVER_REGISTRY["BatchedScipyOMP"] = matcher.SOLVER_REGISTRY["Scipy"]


def _scalar(value):
    return float(value.detach().item()) if isinstance(value, torch.Tensor) else float(value)


class ParityProbe(Callback):
    def __init__(self) -> None:
        self.row: dict = {}

    def setup(self, trainer, pl_module, stage):
        # data parallel: rank r > 0 writes to $PARITY_PROBE_DIR_rank<r>
        suffix = f"_rank{trainer.global_rank}" if trainer.global_rank else ""
        self.dir = Path(os.environ.get("PARITY_PROBE_DIR", "parity_probe") + suffix)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.steps = open(self.dir / "steps.jsonl", "w")
        self.vals = open(self.dir / "val.jsonl", "w")

    def on_train_start(self, trainer, pl_module):
        torch.save({k: v.detach().clone() for k, v in pl_module.state_dict().items()}, self.dir / "init.pt")
        torch.save(torch.get_rng_state(), self.dir / "rng_at_train_start.pt")  # what the loaders draw from
        batch_size = getattr(trainer.datamodule, "batch_size", None)
        (self.dir / "train_start.json").write_text(json.dumps({"batch_size": batch_size}))
        for cb in trainer.callbacks:
            found = getattr(cb, "optimal_lr", None)
            if found is not None:
                (self.dir / "lr_find.json").write_text(json.dumps(found.results))

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        group = trainer.optimizers[0].param_groups[0]
        self.row = {
            "epoch": trainer.current_epoch,
            "step": trainer.global_step,
            "batch_start": _train_slices.popleft() if _train_slices else None,
            "lr": float(group["lr"]),
            "beta1": float(group["betas"][0]),
        }

    def on_after_backward(self, trainer, pl_module):
        norms = [p.grad.norm() for p in pl_module.parameters() if p.grad is not None]
        self.row["grad_sum_norm"] = sum(float(n.item()) for n in norms)
        self.row["grad_l2"] = float(torch.stack(norms).pow(2).sum().sqrt().item())
        if trainer.global_step == 0:  # each parameter's gradient, as salt's GradientLoggerCallback logs it
            self.row["grad_std"] = {n: float(p.grad.std().item()) for n, p in pl_module.named_parameters()
                                    if p.grad is not None}

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        losses = {k: _scalar(v) for k, v in trainer.callback_metrics.items() if k.startswith("train/")}
        if trainer.world_size > 1:  # what salt logs: the mean over ranks (sync_dist)
            self.row["logged_loss"] = losses.get("train/loss")
        losses["train/loss"] = _scalar(outputs["loss"])
        self.row["losses"] = losses
        self.steps.write(json.dumps(self.row) + "\n")
        self.steps.flush()

    def on_validation_end(self, trainer, pl_module):
        if trainer.sanity_checking:
            return
        metrics = {k: _scalar(v) for k, v in trainer.callback_metrics.items() if k.startswith("val/")}
        self.vals.write(json.dumps({"epoch": trainer.current_epoch, "step": trainer.global_step, **metrics}) + "\n")
        self.vals.flush()

    def on_train_end(self, trainer, pl_module):
        opt = trainer.optimizers[0]
        params = list(pl_module.parameters())
        state = []
        for p in params:
            s = opt.state.get(p, {})
            state.append({k: (v.detach().clone() if isinstance(v, torch.Tensor) else v) for k, v in s.items()})
        sd = {k: v.detach().clone() for k, v in pl_module.state_dict().items()}
        names = [n for n, _ in pl_module.named_parameters()]
        torch.save({"state_dict": sd, "param_names": names, "optimizer": state}, self.dir / "final.pt")
        self.steps.close()
        self.vals.close()
