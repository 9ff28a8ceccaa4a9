// placeholder until lib/submit has sources
