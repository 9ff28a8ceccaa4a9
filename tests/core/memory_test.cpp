// core/memory.h's keep_freed_memory, on glibc's real allocator: a large block is
// mapped afresh by default, and after the call comes from the heap and stays there
// for the next allocation once freed.
#include "core/memory.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace salt {
namespace {

TEST(Memory, FreedLargeBlocksStayForTheNextAllocation) {
  const size_t big = size_t{64} << 20;  // above glibc's largest mmap threshold (32 MiB)
  const auto before = mallinfo2();
  void* mapped = std::malloc(big);
  ASSERT_NE(mapped, nullptr);
  std::memset(mapped, 1, big);
  EXPECT_EQ(mallinfo2().hblks, before.hblks + 1) << "glibc maps a large block by default";
  std::free(mapped);

  keep_freed_memory();
  void* heap = std::malloc(big);
  ASSERT_NE(heap, nullptr);
  std::memset(heap, 1, big);
  EXPECT_EQ(mallinfo2().hblks, before.hblks) << "from the heap now";
  std::free(heap);
  EXPECT_GE(mallinfo2().fordblks, big) << "kept in the process, free for the next allocation";
}

}  // namespace
}  // namespace salt
