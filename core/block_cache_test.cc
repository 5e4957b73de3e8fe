#include "core/block_cache.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "layout/alloc_counter.h"

namespace strata {
namespace core_internal {
namespace {

// Each test uses its own block size, so that the lists do not meet.

TEST(BlockCacheTest, AReleasedBlockIsTakenAgainWithoutOperatorNew) {
  using Cache = BlockCache<96>;
  void* first = Cache::Allocate();
  Cache::Deallocate(first);
  EXPECT_EQ(Cache::cached(), 1);
  const int64_t before = testing::AllocationCount();
  for (int i = 0; i < 1000; ++i) {
    void* block = Cache::Allocate();
    EXPECT_EQ(block, first);
    Cache::Deallocate(block);
  }
  EXPECT_EQ(testing::AllocationCount() - before, 0);
  EXPECT_EQ(Cache::Allocate(), first);
  EXPECT_EQ(Cache::cached(), 0);
  Cache::Deallocate(first);
}

TEST(BlockCacheTest, AThreadKeepsAtMostItsCapacity) {
  using Cache = BlockCache<1000>;
  static_assert(Cache::kCapacity == 16, "16 KiB of 1000-byte blocks");
  static_assert(BlockCache<8192>::kCapacity == 4, "at least 4 blocks");
  std::vector<void*> blocks;
  for (int i = 0; i < Cache::kCapacity + 5; ++i)
    blocks.push_back(Cache::Allocate());
  for (void* block : blocks) Cache::Deallocate(block);
  EXPECT_EQ(Cache::cached(), Cache::kCapacity);
  // The kept blocks come back first, the most recent first.
  for (int i = 0; i < Cache::kCapacity; ++i) {
    EXPECT_EQ(Cache::Allocate(), blocks[Cache::kCapacity - 1 - i]);
  }
  EXPECT_EQ(Cache::cached(), 0);
  for (int i = 0; i < Cache::kCapacity; ++i) Cache::Deallocate(blocks[i]);
}

TEST(BlockCacheTest, ABlockReleasedOnAnotherThreadJoinsThatThreadsList) {
  using Cache = BlockCache<104>;
  void* block = Cache::Allocate();
  int cached_there = -1;
  std::thread other([&] {
    Cache::Deallocate(block);
    cached_there = Cache::cached();
    // The thread exits holding it: its list is returned to operator delete
    // (under AddressSanitizer, the leak check sees to it).
  });
  other.join();
  EXPECT_EQ(cached_there, 1);
  EXPECT_EQ(Cache::cached(), 0);
}

// Releases its block from a thread-local destructor that runs after the
// thread's list has been drained (thread-locals are destroyed in the reverse
// order of their construction, and this one is constructed first).
std::atomic<int> cached_after_late_release{-1};
struct LateRelease {
  void* block = nullptr;
  ~LateRelease() {
    BlockCache<112>::Deallocate(block);
    cached_after_late_release = BlockCache<112>::cached();
  }
};

TEST(BlockCacheTest, ABlockReleasedAfterTheThreadsListIsDrainedIsDeleted) {
  std::thread other([] {
    thread_local LateRelease late;
    late.block = BlockCache<112>::Allocate();
    // The first release registers the list's drain, after `late`.
    BlockCache<112>::Deallocate(BlockCache<112>::Allocate());
    EXPECT_EQ(BlockCache<112>::cached(), 1);
  });
  other.join();
  EXPECT_EQ(cached_after_late_release.load(), 0);
}

#ifdef STRATA_BLOCK_CACHE_POISONS
TEST(BlockCacheDeathTest, AUseOfACachedBlockIsReported) {
  using Cache = BlockCache<120>;
  char* block = static_cast<char*>(Cache::Allocate());
  Cache::Deallocate(block);
  EXPECT_DEATH(static_cast<volatile char*>(block)[16] = 1, "use-after-poison");
  EXPECT_EQ(Cache::Allocate(), block);
  block[16] = 1;  // Taken again: no longer poisoned.
  Cache::Deallocate(block);
}
#endif

}  // namespace
}  // namespace core_internal
}  // namespace strata
