// placeholder until lib/repro has sources
