// SmallVector: the storage of IntTuple, a vector of a trivially copyable T
// holding up to N values inline.
//
// absl::InlinedVector is general (any T, exception safety, allocator
// support), and its resize and insert cost more than the views that build
// layouts from them (NOTE [ Views build in place ] in
// core/representation.cc). This one copies with memcpy and appends without a
// per-element loop; beyond N values it holds one heap block.
#ifndef STRATA_LAYOUT_SMALL_VECTOR_H_
#define STRATA_LAYOUT_SMALL_VECTOR_H_

#include <cassert>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <type_traits>

namespace strata {
namespace layout_internal {

template <typename T, uint32_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  // User-provided, so that the inline values stay uninitialized (a defaulted
  // constructor let the compiler zero them with a rep stos).
  SmallVector() {}  // NOLINT(modernize-use-equals-default)
  // One value, without the loop and the call of a general assign (IntTuple's
  // integers are built in every view).
  explicit SmallVector(T value) : size_(1) { inline_[0] = value; }
  // The first n values of `buffer`, which holds N values, copied whole (a
  // few vector moves). Precondition: n <= N.
  struct WholeBuffer {
    explicit WholeBuffer() = default;
  };
  SmallVector(WholeBuffer, const T* buffer, uint32_t n) : size_(n) {
    assert(n <= N);
    std::memcpy(inline_, buffer, sizeof(inline_));
  }
  // n values: `first`, then `rest` through the whole inline buffer, written
  // in place (a vector fill and one store; FlatLayout's tokens, where a
  // buffer filled on the stack and copied whole stalled on the store of its
  // first value). Precondition: 1 <= n <= N.
  struct FirstThenFill {
    explicit FirstThenFill() = default;
  };
  SmallVector(FirstThenFill, T first, T rest, uint32_t n) : size_(n) {
    assert(n >= 1 && n <= N);
    for (uint32_t i = 0; i < N; ++i) inline_[i] = rest;
    inline_[0] = first;
  }
  SmallVector(std::initializer_list<T> values) {
    assign(values.begin(), values.end());
  }
  SmallVector(const SmallVector& other) {
    if (!other.on_heap()) {
      // A fixed-size copy of the whole inline buffer: a few vector moves,
      // where a copy of size() values would call memcpy.
      std::memcpy(inline_, other.inline_, sizeof(inline_));
      size_ = other.size_;
    } else {
      assign(other.begin(), other.end());
    }
  }
  SmallVector(SmallVector&& other) noexcept { Steal(other); }
  SmallVector& operator=(const SmallVector& other) {
    if (this == &other) return *this;
    if (!on_heap() && !other.on_heap()) {
      std::memcpy(inline_, other.inline_, sizeof(inline_));
      size_ = other.size_;
    } else {
      assign(other.begin(), other.end());
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      if (on_heap()) std::free(heap_);
      capacity_ = N;
      Steal(other);
    }
    return *this;
  }
  ~SmallVector() {
    if (on_heap()) std::free(heap_);
  }

  T* data() { return on_heap() ? heap_ : inline_; }
  const T* data() const { return on_heap() ? heap_ : inline_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }

  void clear() { size_ = 0; }
  // Keeps the first n values. Precondition: n <= size().
  void truncate(size_t n) { size_ = static_cast<uint32_t>(n); }
  // New values are indeterminate, for a caller that writes them all.
  void resize_for_overwrite(size_t n) {
    Reserve(n);
    size_ = static_cast<uint32_t>(n);
  }
  // New values are zero.
  void resize(size_t n) {
    Reserve(n);
    T* d = data();
    for (size_t i = size_; i < n; ++i) d[i] = T();
    size_ = static_cast<uint32_t>(n);
  }
  // Appends [first, last), which must not lie in this vector (a loop: the
  // ranges are a few values).
  void append(const T* first, const T* last) {
    const size_t n = last - first;
    Reserve(size_ + n);
    T* d = data() + size_;
    for (size_t i = 0; i < n; ++i) d[i] = first[i];
    size_ += static_cast<uint32_t>(n);
  }
  void push_back(T value) {
    Reserve(size_ + 1);
    data()[size_++] = value;
  }
  void assign(size_t n, T value) {
    Reserve(n);
    T* d = data();
    for (size_t i = 0; i < n; ++i) d[i] = value;
    size_ = static_cast<uint32_t>(n);
  }
  // [first, last) must not lie in this vector.
  void assign(const T* first, const T* last) {
    const size_t n = last - first;
    Reserve(n);
    if (n > 0) std::memcpy(data(), first, n * sizeof(T));
    size_ = static_cast<uint32_t>(n);
  }
  // The first n values of `buffer`, which holds at least N values (so that an
  // inline vector takes them in one fixed-size copy).
  void assign_from_buffer(const T* buffer, size_t n) {
    if (n <= N && !on_heap()) {
      std::memcpy(inline_, buffer, sizeof(inline_));
      size_ = static_cast<uint32_t>(n);
    } else {
      assign(buffer, buffer + n);
    }
  }
  // Inserts [first, last), which must not lie in this vector, before pos.
  T* insert(T* pos, const T* first, const T* last) {
    const size_t at = pos - data();
    const size_t n = last - first;
    Reserve(size_ + n);
    T* d = data();
    std::memmove(d + at + n, d + at, (size_ - at) * sizeof(T));
    if (n > 0) std::memcpy(d + at, first, n * sizeof(T));
    size_ += static_cast<uint32_t>(n);
    return d + at;
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return a.size_ == b.size_ &&
           (a.size_ == 0 ||
            std::memcmp(a.data(), b.data(), a.size_ * sizeof(T)) == 0);
  }
  friend bool operator!=(const SmallVector& a, const SmallVector& b) {
    return !(a == b);
  }

 private:
  void Reserve(size_t n) {
    if (n > capacity_) Grow(n);
  }
  // Out of line: the inline path of every append is one compare.
  __attribute__((noinline)) void Grow(size_t n) {
    size_t capacity = capacity_ * 2;
    if (capacity < n) capacity = n;
    T* block = static_cast<T*>(std::malloc(capacity * sizeof(T)));
    if (block == nullptr) throw std::bad_alloc();
    if (size_ > 0) std::memcpy(block, data(), size_ * sizeof(T));
    if (on_heap()) std::free(heap_);
    heap_ = block;
    capacity_ = static_cast<uint32_t>(capacity);
  }
  // Takes other's values; *this holds no heap block.
  void Steal(SmallVector& other) {
    if (other.on_heap()) {
      heap_ = other.heap_;
      capacity_ = other.capacity_;
      other.capacity_ = N;
    } else {
      std::memcpy(inline_, other.inline_, sizeof(inline_));
    }
    size_ = other.size_;
    other.size_ = 0;
  }

  // Values live inline while capacity_ is N, in one heap block beyond.
  bool on_heap() const { return capacity_ > N; }

  uint32_t size_ = 0;
  uint32_t capacity_ = N;
  // One or the other, as absl::InlinedVector does: a smaller Layout lets a
  // two-level representation fit the allocator's per-thread cache.
  // Not zeroed (a rep stos per vector costs more than the views that build
  // them): the fixed-size copies above copy bytes past size(), which memcpy
  // may, and no value past size() is ever read.
  union {
    T* heap_;
    T inline_[N];
  };
};

}  // namespace layout_internal
}  // namespace strata

#endif  // STRATA_LAYOUT_SMALL_VECTOR_H_
