#!/usr/bin/env python3
"""What a salt user's Python does with a salt-cpp run's checkpoints (issue 33).

Usage: lightning_checks.py RUN_DIR

For every RUN_DIR/ckpts/*.ckpt:
  - torch.load(..., weights_only=True): torch >= 2.6's default, and Lightning 2.6's
    loader's (on torch 1.x, whose weights-only reader has no float opcode, a plain load);
  - Lightning's top-level keys;
  - where Lightning is installed (the GPU machine has it; Debian's python here has not):
    its checkpoint migration, and LightningModule.load_from_checkpoint into a module
    that takes any hyper-parameters (salt's ModelWrapper is not here), which runs
    Lightning's own loader with its weights_only default and hands the module the
    hyper_parameters as LightningCLI saved them.
Prints one line per check; exits 1 at the first failure.
"""
import glob
import os
import sys

import torch

KEYS = ("epoch", "global_step", "pytorch-lightning_version", "state_dict", "loops", "callbacks",
        "optimizer_states", "lr_schedulers", "hparams_name", "hyper_parameters")


def fail(text):
    print("lightning_checks: FAILED:", text)
    sys.exit(1)


def torch_major_minor():
    return tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])


def main(run_dir):
    ckpts = sorted(glob.glob(os.path.join(run_dir, "ckpts", "*.ckpt")))
    if not ckpts:
        fail(f"no checkpoint in {run_dir}/ckpts")
    weights_only = torch_major_minor() >= (2, 0)
    for path in ckpts:
        name = os.path.basename(path)
        try:
            ckpt = torch.load(path, map_location="cpu", weights_only=weights_only)
        except Exception as e:  # noqa: BLE001 - the message is the finding
            fail(f"{name}: torch.load(weights_only={weights_only}): {e}")
        missing = [k for k in KEYS if k not in ckpt]
        if missing:
            fail(f"{name}: no {missing}")
        print(f"lightning_checks: {name}: torch {torch.__version__} load(weights_only={weights_only}) ok, "
              f"{len(ckpt['state_dict'])} tensors, Lightning's keys present")
    try:
        import lightning.pytorch as pl
        from lightning.pytorch.utilities.migration.utils import _pl_migrate_checkpoint
    except ImportError:
        print("lightning_checks: Lightning is not installed here: its loader not run")
        return
    import copy
    import importlib.util

    has_jsonargparse = importlib.util.find_spec("jsonargparse") is not None

    # salt's ModelWrapper's arguments, untyped: LightningCLI's instantiator (jsonargparse)
    # then passes the saved values as they are, where salt would build its modules.
    class AnyModel(pl.LightningModule):
        def __init__(self, model=None, lrs_config=None, global_object=None, norm_config=None, name="salt",
                     mup_config=None, loss_mode="wsum", optimizer="AdamW", edge_constructors=None):
            super().__init__()
            self.save_hyperparameters()

    for path in ckpts:
        name = os.path.basename(path)
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
        try:
            _pl_migrate_checkpoint(copy.deepcopy(ckpt), path)
            if has_jsonargparse:
                model = AnyModel.load_from_checkpoint(path, map_location="cpu", strict=False)
                how = "load_from_checkpoint (its loader and LightningCLI's instantiator)"
            else:
                # LightningCLI's instantiator parses with jsonargparse (salt's dependency);
                # without it Lightning's cli.py binds ArgumentParser to `object`, and the
                # instantiator fails with "object() takes no arguments". Load without it.
                from lightning.pytorch.core.saving import _load_state
                ckpt["hyper_parameters"].pop("_instantiator", None)
                model = _load_state(AnyModel, ckpt, strict=False)
                how = "_load_state (Lightning's loader without the instantiator: no jsonargparse here)"
        except Exception as e:  # noqa: BLE001
            fail(f"{name}: Lightning {pl.__version__}: {type(e).__name__}: {e}")
        for key in ("model", "lrs_config", "global_object"):
            if model.hparams.get(key) is None:
                fail(f"{name}: hyper_parameters without '{key}': {sorted(model.hparams)}")
        print(f"lightning_checks: {name}: Lightning {pl.__version__} migrates it and {how} hands over "
              f"{len(model.hparams)} hyper-parameters")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
