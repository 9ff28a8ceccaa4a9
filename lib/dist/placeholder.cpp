// placeholder until lib/dist has sources
