#include "models/packing/host_read.h"

#include <atomic>

namespace salt {
namespace {
std::atomic<int64_t> reads{0};
}  // namespace

int64_t host_reads() { return reads.load(std::memory_order_relaxed); }
void count_host_read() { reads.fetch_add(1, std::memory_order_relaxed); }

}  // namespace salt
