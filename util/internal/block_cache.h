// A per-thread cache of heap blocks of one size: the blocks of the
// representations that views and Tensor::Create make (NOTE [ Recycled
// representation blocks ] in core/representation.cc).
#ifndef STRATA_UTIL_INTERNAL_BLOCK_CACHE_H_
#define STRATA_UTIL_INTERNAL_BLOCK_CACHE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include "absl/base/config.h"

namespace strata {
namespace util_internal {

// Under AddressSanitizer nothing is recycled: reusing a released block at
// once would bypass its quarantine, and a dangling reference into a released
// representation would then read the next one silently.
#ifdef ABSL_HAVE_ADDRESS_SANITIZER
inline constexpr bool kBlockCacheRecycles = false;
#else
inline constexpr bool kBlockCacheRecycles = true;
#endif

// Blocks of kSize bytes from operator new, kept after release in a list of
// the releasing thread, up to kCapacity of them (16 KiB of blocks, and at
// least 4), and handed out again before operator new is asked. The lists are
// per thread and never shared, so no operation synchronizes; a block may be
// released on another thread than the one that took it.
//
// A thread's list is armed by its first Allocate, which registers a
// thread-local destructor that returns the list to operator delete when the
// thread exits; until then, and after that destructor has run, released
// blocks go straight to operator delete. (A thread that allocates for the
// first time from a pthread-key destructor, after its thread-local
// destructors have run, would keep its list: a corner that views made
// during a thread's teardown reach.)
template <std::size_t kSize>
class BlockCache {
 public:
  static_assert(kSize >= sizeof(void*), "a cached block holds its link");
  static constexpr int kCapacity =
      16384 / kSize < 4 ? 4 : static_cast<int>(16384 / kSize);

  // A block of kSize bytes, aligned as operator new aligns.
  static void* Allocate() {
    if (!kBlockCacheRecycles) return ::operator new(kSize);
    List& list = list_;
    if (list.state == kFresh) {
      // Constructs this thread's Drainer and schedules its destructor.
      drainer_.armed = true;
      list.state = kArmed;
    }
    Node* node = list.head;
    if (node == nullptr) return ::operator new(kSize);
    list.head = node->next;
    --list.count;
    node->~Node();
    return node;
  }

  // Releases a block that Allocate returned (on any thread).
  static void Deallocate(void* block) {
    List& list = list_;
    if (!kBlockCacheRecycles || list.state != kArmed ||
        list.count == kCapacity) {
      ::operator delete(block);
      return;
    }
    list.head = new (block) Node{list.head};
    ++list.count;
  }

  // How many blocks this thread's list holds, and how many blocks exiting
  // threads have returned to operator delete (for tests).
  static int cached() { return list_.count; }
  static int64_t drained() { return drained_.load(std::memory_order_relaxed); }

 private:
  struct Node {
    Node* next;
  };
  enum State : int { kFresh = 0, kArmed = 1, kDrained = 2 };
  // Trivially destructible and zero-initialized: reading it costs no guard,
  // and it stays readable after the thread's destructors have run.
  struct List {
    Node* head;
    int count;
    int state;
  };
  // Its destructor, registered by the thread's first Allocate, returns the
  // list to operator delete when the thread exits.
  struct Drainer {
    bool armed;
    ~Drainer() {
      List& list = list_;
      int64_t returned = 0;
      while (list.head != nullptr) {
        Node* node = list.head;
        list.head = node->next;
        node->~Node();
        ::operator delete(node);
        ++returned;
      }
      list.count = 0;
      list.state = kDrained;
      drained_.fetch_add(returned, std::memory_order_relaxed);
    }
  };

  static thread_local List list_;
  static thread_local Drainer drainer_;
  static std::atomic<int64_t> drained_;
};

template <std::size_t kSize>
thread_local typename BlockCache<kSize>::List BlockCache<kSize>::list_;
template <std::size_t kSize>
thread_local typename BlockCache<kSize>::Drainer BlockCache<kSize>::drainer_;
template <std::size_t kSize>
std::atomic<int64_t> BlockCache<kSize>::drained_{0};

// A stateless allocator of single objects from BlockCache<sizeof(T)> (arrays
// from operator new), for std::allocate_shared: the block is the control
// block and the object together.
template <typename T>
struct CachedBlockAllocator {
  using value_type = T;
  CachedBlockAllocator() = default;
  template <typename U>
  CachedBlockAllocator(const CachedBlockAllocator<U>&) {}  // NOLINT

  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__,
                "operator new(std::size_t) aligns the blocks");

  T* allocate(std::size_t n) {
    if (n != 1) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(BlockCache<sizeof(T)>::Allocate());
  }
  void deallocate(T* p, std::size_t n) {
    if (n != 1) return ::operator delete(p);
    BlockCache<sizeof(T)>::Deallocate(p);
  }
  template <typename U>
  bool operator==(const CachedBlockAllocator<U>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const CachedBlockAllocator<U>&) const {
    return false;
  }
};

}  // namespace util_internal
}  // namespace strata

#endif  // STRATA_UTIL_INTERNAL_BLOCK_CACHE_H_
