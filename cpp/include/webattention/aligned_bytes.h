// Heap bytes that start on a cache line. The kernels stream weight panels and cache blocks with
// 16-byte loads at offsets that are multiples of 16 or 32 from the start: from malloc's 8-byte
// alignment a quarter of those loads straddle two cache lines, and which quarter depended on
// where earlier allocations happened to leave the heap (a decode step ~7 % slower or not,
// build to build: bench/ab/process_decode_ab.mjs).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace webattention {

struct FreeBytes {
  void operator()(unsigned char* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<unsigned char[], FreeBytes>;

constexpr std::size_t kCacheLine = 64;

// n bytes (zeroed if asked) at a multiple of kCacheLine; throws std::bad_alloc as new[] does.
inline AlignedBytes aligned_bytes(std::size_t n, bool zeroed = false) {
  // aligned_alloc wants a multiple of the alignment (and at least one line: never a null for 0).
  const std::size_t whole = (n == 0 ? 1 : (n - 1) / kCacheLine + 1) * kCacheLine;
  if (whole < n) throw std::bad_alloc();
  auto* p = static_cast<unsigned char*>(std::aligned_alloc(kCacheLine, whole));
  if (!p) throw std::bad_alloc();
  if (zeroed) std::memset(p, 0, n);
  return AlignedBytes(p);
}

}  // namespace webattention
