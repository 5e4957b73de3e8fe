// A per-thread cache of heap blocks of one size: the blocks of the
// representations that views and Tensor::Create make (NOTE [ Recycled
// representation blocks ] in core/representation.cc).
#ifndef STRATA_CORE_BLOCK_CACHE_H_
#define STRATA_CORE_BLOCK_CACHE_H_

#include <cstddef>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define STRATA_BLOCK_CACHE_POISONS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_BLOCK_CACHE_POISONS 1
#endif
#endif
#ifdef STRATA_BLOCK_CACHE_POISONS
#include <sanitizer/asan_interface.h>
#endif

namespace strata {
namespace core_internal {

// Blocks of kSize bytes from operator new, kept after release in a list of
// the releasing thread, up to kCapacity of them (at most 16 KiB), and handed
// out again before operator new is asked. The lists are per thread and never
// shared, so no operation synchronizes; a block may be released on another
// thread than the one that took it. A thread's list is returned to operator
// delete when the thread exits; a block released after that (by another
// thread-local's destructor) goes straight to operator delete. Under
// AddressSanitizer a cached block is poisoned past its link, so that a use
// after release is still reported.
template <size_t kSize>
class BlockCache {
 public:
  static_assert(kSize >= sizeof(void*), "a cached block holds its link");
  static constexpr int kCapacity =
      16384 / kSize < 4 ? 4 : static_cast<int>(16384 / kSize);

  // A block of kSize bytes, aligned as operator new aligns.
  static void* Allocate() {
    List& list = list_;
    Node* node = list.head;
    if (node == nullptr) return ::operator new(kSize);
#ifdef STRATA_BLOCK_CACHE_POISONS
    ASAN_UNPOISON_MEMORY_REGION(node, kSize);
#endif
    list.head = node->next;
    --list.count;
    return node;
  }

  // Releases a block that Allocate returned (on any thread).
  static void Deallocate(void* block) {
    List& list = list_;
    if (list.state != kArmed) {
      if (list.state == kDrained) {
        ::operator delete(block);
        return;
      }
      // Registers this thread's Drainer: its first use constructs it and
      // schedules its destructor.
      drainer_.armed = true;
      list.state = kArmed;
    }
    if (list.count == kCapacity) {
      ::operator delete(block);
      return;
    }
    Node* node = static_cast<Node*>(block);
    node->next = list.head;
    list.head = node;
    ++list.count;
#ifdef STRATA_BLOCK_CACHE_POISONS
    ASAN_POISON_MEMORY_REGION(reinterpret_cast<char*>(node) + sizeof(Node),
                              kSize - sizeof(Node));
#endif
  }

  // How many blocks this thread's list holds (for tests).
  static int cached() { return list_.count; }

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
  // Its destructor, registered on the thread's first release, returns the
  // list to operator delete when the thread exits.
  struct Drainer {
    bool armed;
    ~Drainer() {
      List& list = list_;
      while (list.head != nullptr) {
        Node* node = list.head;
#ifdef STRATA_BLOCK_CACHE_POISONS
        ASAN_UNPOISON_MEMORY_REGION(node, kSize);
#endif
        list.head = node->next;
        ::operator delete(node);
      }
      list.count = 0;
      list.state = kDrained;
    }
  };

  static thread_local List list_;
  static thread_local Drainer drainer_;
};

template <size_t kSize>
thread_local typename BlockCache<kSize>::List BlockCache<kSize>::list_;
template <size_t kSize>
thread_local typename BlockCache<kSize>::Drainer BlockCache<kSize>::drainer_;

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
                "operator new(size_t) aligns the blocks");

  T* allocate(size_t n) {
    if (n != 1) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(BlockCache<sizeof(T)>::Allocate());
  }
  void deallocate(T* p, size_t n) {
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

}  // namespace core_internal
}  // namespace strata

#endif  // STRATA_CORE_BLOCK_CACHE_H_
