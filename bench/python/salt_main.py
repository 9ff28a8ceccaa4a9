"""salt's own `salt` command (salt.main) with bench/python/parity_probe.py loaded first
(its sampler record, the matcher's stand-in solver), for bench/train_parity.sh."""
import parity_probe  # noqa: F401
from salt.main import main

main()
