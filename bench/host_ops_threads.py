#!/usr/bin/env python3
"""What intra-op threads cost the host's small tensor operations when other work
keeps the cores busy (training/step/threads.h): one GPU step's host-copy operations
(models/packing/host_twins.h: token counts, their max and sum, the labels' checks, on a
[4000, 40] batch) timed with 1 thread and with one per core, first on idle cores,
then beside one busy process per core (as a GPU fit's loader workers keep them).

Usage: /usr/bin/python3 bench/host_ops_threads.py   (any python with torch)
"""
import os
import subprocess
import time

import torch


def per_step_ms(threads, steps=200):
    torch.set_num_threads(threads)
    mask = torch.rand(4000, 40) > 0.6
    labels = torch.randint(-1, 8, (4000, 40))

    def step():
        counts = mask.logical_not().sum(1)
        counts.max().item()
        counts.sum().item()
        y = labels.masked_fill(mask, -1)
        valid = y != -1
        bad = valid & ((y < 0) | (y >= 8))
        torch.stack([bad.any(), valid.any()])
        (counts * (counts - 1)).sum().item()

    for _ in range(20):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps * 1e3


cores = os.cpu_count() or 1
for busy in (0, cores):
    hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(busy)]
    try:
        time.sleep(0.5)
        one, all_ = per_step_ms(1), per_step_ms(cores)
    finally:
        for h in hogs:
            h.kill()
    print(f"{busy} busy processes: 1 thread {one:.2f} ms/step, {cores} threads {all_:.2f} ms/step, "
          f"ratio {all_ / one:.2f}x")
