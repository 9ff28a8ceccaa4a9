"""A Lightning callback that prints each training epoch's jets/s, for salt itself.

bench/fit_vs_salt.sh adds it to salt's own `salt fit` so that salt's epochs are
timed as salt-cpp times its own (`info: train epoch N: S s`): from the epoch's
first batch to its last training batch done, the card synchronised at both ends,
validation not included. One line per epoch:

    epoch_timer: train epoch 1: 160000 jets in 2.512 s: 63694 jets/s

and at the end of fit the whole `trainer.fit` in wall-clock seconds.
"""
import time

import torch
from lightning.pytorch.callbacks import Callback


def _sync(module) -> None:
    if module.device.type == "cuda":
        torch.cuda.synchronize(module.device)


def _jets_in(batch) -> int:
    """salt's batches are (inputs, pad_masks, labels); inputs maps each input to a [B, ...] tensor."""
    inputs = batch[0]
    first = next(iter(inputs.values())) if isinstance(inputs, dict) else inputs
    return int(first.shape[0])


class EpochTimer(Callback):
    def __init__(self) -> None:
        self.fit_start = None
        self.epoch_start = None
        self.last_batch_end = None
        self.jets = 0

    def on_fit_start(self, trainer, pl_module) -> None:
        self.fit_start = time.perf_counter()

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        _sync(pl_module)
        self.epoch_start = time.perf_counter()
        self.jets = 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.jets += _jets_in(batch)
        self.last_batch_end = None  # synchronised once, at the epoch's end

    def on_validation_start(self, trainer, pl_module) -> None:
        self._close_training(trainer, pl_module)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self._close_training(trainer, pl_module)

    def _close_training(self, trainer, pl_module) -> None:
        if trainer.sanity_checking or self.epoch_start is None or self.last_batch_end is not None:
            return
        _sync(pl_module)
        self.last_batch_end = time.perf_counter()
        seconds = self.last_batch_end - self.epoch_start
        print(f"epoch_timer: train epoch {trainer.current_epoch}: {self.jets} jets in {seconds:.3f} s: "
              f"{self.jets / seconds:.0f} jets/s", flush=True)

    def on_fit_end(self, trainer, pl_module) -> None:
        print(f"epoch_timer: fit {time.perf_counter() - self.fit_start:.1f} s", flush=True)
