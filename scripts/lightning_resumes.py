#!/usr/bin/env python3
"""Lightning 2.6 resumes salt-cpp's checkpoints: a run that trains with
EMAWeightAveraging, and a checkpoint a run saved on an exception (issue 67).

Usage: lightning_resumes.py ema SALT_CPP_CKPT OUT_CKPT DECAY
       lightning_resumes.py exception SALT_CPP_CKPT BATCHES_PER_EPOCH

ema: SALT_CPP_CKPT is an epoch-end checkpoint of a salt-cpp fit with
lightning.pytorch.callbacks.EMAWeightAveraging (decay DECAY). salt's ModelWrapper
is not needed: a LightningModule with the checkpoint's own parameters and buffers
(names, shapes, order), its optimizer's groups and its one-cycle schedule stands
for it, trained one more epoch on a loss of its weights with Lightning's own
EMAWeightAveraging. Checks, printing one line each, exit 1 at the first failure:
  - Lightning's restore (Trainer.fit(ckpt_path=...), WeightAveraging.on_load_checkpoint)
    gives the module salt-cpp's current_model_state and the AveragedModel salt-cpp's
    average and n_averaged;
  - one epoch later the average is decay x average + (1 - decay) x weights after
    each step, computed here from the weights Lightning trained;
  - Lightning's checkpoint (OUT_CKPT, saved at that epoch's end) holds them where
    salt-cpp reads them (state_dict, current_model_state, averaging_state).
exception: SALT_CPP_CKPT is what OnExceptionCheckpoint (or ModelCheckpoint's
save_on_exception) wrote inside an epoch of BATCHES_PER_EPOCH batches; Lightning
resumes it mid-epoch: it trains the epoch's batches not yet done (a plain
DataLoader: the epoch starts over and ends after them), and its step count goes on
from the checkpoint's.
Needs torch >= 2.1 and Lightning 2.6 (the GPU machines; here Debian trixie's torch
2.6 with Lightning's source on PYTHONPATH: docs/training.md says how).
"""
import sys

import torch
import lightning.pytorch as pl
from lightning.pytorch.callbacks import EMAWeightAveraging


def fail(text):
    print("lightning_resumes: FAILED:", text)
    sys.exit(1)


def max_diff(a, b):
    return max(float((x.double() - y.double()).abs().max()) if x.numel() else 0.0 for x, y in zip(a, b))


class Mirror(pl.LightningModule):
    """The checkpoint's tensors as a module: its parameters are those the optimizer
    state counts, in the checkpoint's order; the rest are buffers."""

    def __init__(self, state, param_names, groups, schedule, **hparams):
        super().__init__()
        self.save_hyperparameters(hparams)
        self.param_names = param_names
        for name, value in state.items():
            *path, leaf = name.split(".")
            module = self
            for part in path:
                if part not in module._modules:
                    module.add_module(part, torch.nn.Module())
                module = module._modules[part]
            if name in param_names:
                module.register_parameter(leaf, torch.nn.Parameter(value.clone()))
            else:
                module.register_buffer(leaf, value.clone())
        self.groups, self.schedule = groups, schedule

    def training_step(self, batch, batch_idx):
        return sum((p.float() ** 2).mean() for p in self.parameters()) * 1e-3

    def configure_optimizers(self):
        params = list(self.parameters())
        groups = [dict({k: v for k, v in g.items() if k != "params"}, params=[params[i] for i in g["params"]])
                  for g in self.groups]
        opt = torch.optim.AdamW(groups)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=[g["max_lr"] for g in self.groups],
                                                    total_steps=self.schedule["total_steps"])
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


class Check(pl.Callback):
    def __init__(self, ckpt, decay, out):
        self.ckpt, self.decay, self.out = ckpt, decay, out
        self.expected = None

    def ema(self, trainer):
        return next(c for c in trainer.callbacks if isinstance(c, EMAWeightAveraging))._average_model

    def on_train_start(self, trainer, module):
        ck = self.ckpt
        names = list(ck["current_model_state"])
        now = module.state_dict()
        if (d := max_diff([now[n] for n in names], [ck["current_model_state"][n] for n in names])) != 0:
            fail(f"Lightning's module does not start from salt-cpp's current_model_state (max difference {d})")
        avg = self.ema(trainer).module.state_dict()
        if (d := max_diff([avg[n] for n in names], [ck["state_dict"][n] for n in names])) != 0:
            fail(f"Lightning's AveragedModel does not start from salt-cpp's average (max difference {d})")
        n = int(self.ema(trainer).n_averaged)
        if n != int(ck["averaging_state"]["n_averaged"]):
            fail(f"n_averaged {n}, salt-cpp's {int(ck['averaging_state']['n_averaged'])}")
        print(f"lightning_resumes: Lightning {pl.__version__} (torch {torch.__version__}) restores salt-cpp's "
              f"weights, average and n_averaged {n} at step {trainer.global_step}")
        self.expected = {k: v.clone().double() for k, v in ck["state_dict"].items() if k in module.param_names}

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        now = module.state_dict()  # after the step and after EMA's update (its callback runs first)
        for k in self.expected:
            self.expected[k] = self.decay * self.expected[k] + (1 - self.decay) * now[k].double()

    def on_train_epoch_end(self, trainer, module):
        avg = self.ema(trainer).module.state_dict()
        keys = list(self.expected)
        d = max_diff([avg[k] for k in keys], [self.expected[k] for k in keys])
        if d > 1e-6:
            fail(f"after an epoch the average is {d} from decay x average + (1 - decay) x weights")
        print(f"lightning_resumes: after {trainer.global_step - self.ckpt['global_step']} Lightning steps the "
              f"average follows the EMA formula (max difference {d:.1e}); n_averaged {int(self.ema(trainer).n_averaged)}")
        trainer.save_checkpoint(self.out)


def mirror_of(ck, state):
    groups = ck["optimizer_states"][0]["param_groups"]
    n_params = sum(len(g["params"]) for g in groups)
    # salt-cpp writes the parameters first, then the buffers (checkpoint.h: module_state).
    names = list(state)
    return Mirror(state, set(names[:n_params]), groups, ck["lr_schedulers"][0], **ck.get("hyper_parameters", {}))


def batches(n):
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(n, 1)), batch_size=1)


class CountSteps(pl.Callback):
    def __init__(self):
        self.batches = 0

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.batches += 1


def resume_exception(path, per_epoch):
    ck = torch.load(path, map_location="cpu", weights_only=True)
    done = ck["loops"]["fit_loop"]["epoch_loop.batch_progress"]["current"]["completed"]
    if not 0 < done < per_epoch:
        fail(f"{path} was saved after {done} of {per_epoch} batches: not inside an epoch")
    count = CountSteps()
    trainer = pl.Trainer(max_epochs=ck["epoch"] + 1, accelerator="cpu", logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, limit_val_batches=0,
                         num_sanity_val_steps=0, callbacks=[count])
    trainer.fit(mirror_of(ck, ck["state_dict"]), train_dataloaders=batches(per_epoch), ckpt_path=path)
    if count.batches != per_epoch - done or trainer.global_step != ck["global_step"] + per_epoch - done:
        fail(f"Lightning trained {count.batches} batches to step {trainer.global_step} from a checkpoint at step "
             f"{ck['global_step']} after {done} of the epoch's {per_epoch} batches")
    print(f"lightning_resumes: Lightning {pl.__version__} resumes salt-cpp's on-exception checkpoint of epoch "
          f"{ck['epoch']} after {done} of {per_epoch} batches: trains the {count.batches} left, to step "
          f"{trainer.global_step}")


def resume_ema(path, out, decay):
    ck = torch.load(path, map_location="cpu", weights_only=True)
    for key in ("current_model_state", "averaging_state", "state_dict", "optimizer_states", "lr_schedulers"):
        if key not in ck:
            fail(f"{path} has no {key}")
    names = list(ck["current_model_state"])
    module = mirror_of(ck, ck["current_model_state"])
    data = batches(4)
    trainer = pl.Trainer(max_epochs=ck["epoch"] + 2, accelerator="cpu", logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, limit_val_batches=0,
                         num_sanity_val_steps=0, callbacks=[EMAWeightAveraging(decay=decay), Check(ck, decay, out)])
    trainer.fit(module, train_dataloaders=data, ckpt_path=path)
    saved = torch.load(out, map_location="cpu", weights_only=True)
    for key in ("current_model_state", "averaging_state", "state_dict"):
        if key not in saved or (key != "averaging_state" and set(saved[key]) != set(names)):
            fail(f"Lightning's checkpoint {out}: {key} missing or not salt-cpp's names")
    print(f"lightning_resumes: Lightning's checkpoint {out} holds state_dict, current_model_state and "
          f"averaging_state (n_averaged {int(saved['averaging_state']['n_averaged'])}) at step {saved['global_step']}")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "ema":
        resume_ema(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    elif len(sys.argv) == 4 and sys.argv[1] == "exception":
        resume_exception(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)
