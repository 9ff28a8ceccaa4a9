// CLI11 validators for counts and seeds that say what is wanted in a few words
// (CLI11's own range checks print "Value 0 not in range 0.000000 to 1797...").
#pragma once
#include <CLI/CLI.hpp>

namespace salt::cli {

// A whole number >= 1 (jets, slots, MiB).
CLI::Validator positive_count();
// A whole number from `min` to `max` (slots).
CLI::Validator count_from(long long min, long long max);
// A whole number >= 0 (0: none).
CLI::Validator non_negative_count();
// A seed: a whole number from 0 to 2^64 - 1 (a negative one would wrap silently).
CLI::Validator seed_value();

}  // namespace salt::cli
