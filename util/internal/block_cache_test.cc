#include "util/internal/block_cache.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "util/alloc_counter.h"

namespace strata {
namespace util_internal {
namespace {

// Each test uses its own block size, so that the lists do not meet.

#define SKIP_WITHOUT_RECYCLING()                                          \
  if (!kBlockCacheRecycles) {                                             \
    GTEST_SKIP() << "AddressSanitizer: every block goes to operator new " \
                    "and delete";                                         \
  }

TEST(BlockCacheTest, AReleasedBlockIsTakenAgainWithoutOperatorNew) {
  SKIP_WITHOUT_RECYCLING();
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
  SKIP_WITHOUT_RECYCLING();
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

TEST(BlockCacheTest, AnExitingThreadReturnsItsListToOperatorDelete) {
  SKIP_WITHOUT_RECYCLING();
  using Cache = BlockCache<104>;
  void* block = Cache::Allocate();
  const int64_t drained_before = Cache::drained();
  int cached_there = -1;
  std::thread other([&] {
    // Its first Allocate arms its list; then it releases its own block and
    // one allocated here.
    Cache::Deallocate(Cache::Allocate());
    Cache::Deallocate(block);
    cached_there = Cache::cached();
  });
  other.join();
  EXPECT_EQ(cached_there, 2);
  EXPECT_EQ(Cache::drained() - drained_before, 2);
  EXPECT_EQ(Cache::cached(), 0);
}

TEST(BlockCacheTest, AThreadThatNeverAllocatesKeepsNothing) {
  using Cache = BlockCache<120>;
  void* block = Cache::Allocate();
  int cached_there = -1;
  std::thread other([&] {
    Cache::Deallocate(block);
    cached_there = Cache::cached();
  });
  other.join();
  EXPECT_EQ(cached_there, 0);
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
  SKIP_WITHOUT_RECYCLING();
  std::thread other([] {
    thread_local LateRelease late;
    // The first Allocate registers the list's drain, after `late`.
    late.block = BlockCache<112>::Allocate();
    BlockCache<112>::Deallocate(BlockCache<112>::Allocate());
    EXPECT_EQ(BlockCache<112>::cached(), 1);
  });
  other.join();
  EXPECT_EQ(cached_after_late_release.load(), 0);
}

TEST(BlockCacheDeathTest, UnderAddressSanitizerAUseAfterReleaseIsReported) {
  if (kBlockCacheRecycles) GTEST_SKIP() << "only under AddressSanitizer";
  using Cache = BlockCache<128>;
  char* block = static_cast<char*>(Cache::Allocate());
  Cache::Deallocate(block);
  EXPECT_DEATH(static_cast<volatile char*>(block)[16] = 1,
               "heap-use-after-free");
}

}  // namespace
}  // namespace util_internal
}  // namespace strata
