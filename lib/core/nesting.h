// One limit for every reader of nested data from outside: YAML configs (and the
// config inside a checkpoint), Python pickles (checkpoints from torch.save),
// and the Python values salt-cpp turns into YAML. The readers walk nested data
// recursively, so an unbounded depth is a stack overflow (a SIGSEGV) rather
// than an error; no real config or checkpoint comes near the limit (salt's
// deepest config: 9 levels; a Lightning checkpoint: 7). docs/refusals.md states
// it.
#pragma once

namespace salt {

// The deepest nesting of containers (mappings, sequences, Python's dicts,
// lists, tuples, sets and objects) that salt-cpp reads: the top level is depth
// 0.
inline constexpr int kMaxNesting = 256;

} // namespace salt
