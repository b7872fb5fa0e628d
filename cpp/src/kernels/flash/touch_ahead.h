// A narrow cache's next reads, started early. A decode step's loops over an int8 or f16 cache
// (narrow_pairs_simd128.h, narrow_rows_simd128.h) compute long enough per cache line that one
// thread has few of its misses in flight, and the hardware prefetcher, restarting at each 4 KB
// page, does not run far enough ahead. So while a tile's scores are computed, its V tile is
// touched (a share per key panel), and while its P·V runs, the next tile's keys are: their misses
// then overlap the arithmetic instead of stalling it; only after a whole tile, since a shorter one
// is a run's last (else the touches would read slots past the cache's length). Only the first
// kLeadLines lines of each page are touched: that starts the prefetcher on the page, and the one-
// row loops (multi-head attention: one query row per K/V head) have too little arithmetic per
// line to touch every one (a byte of each 64-byte line cost a layer whose cache sits in the L2
// 11-13 %; these touches cost it 3-5 %).
// WebAssembly has no prefetch: a touch is a volatile load (clang keeps it), its byte summed into
// a thread's own variable, so that the engine sees a use and no two threads write one line.
// Measured on a Xeon VM (AVX-512), two builds in one Node process, tokens interleaved:
//   - 8 layers (768, 12, 12) over f16 caches of 2048 slots: 0.85-0.86× the time with one thread
//     (every line touched: 0.85-0.91×; 2 lines a page 0.88×, 1 line 0.91×), 0.90× with two;
//     int8 caches 0.92-0.94× (2 lines a page 1.01-1.04×);
//   - 24 layers (2048, 32, 8), GQA, caches of 512: against every line touched 0.997-1.012×, and
//     every line against no touches: i4a8 0.947-0.973× (one thread, relaxed), 0.963-0.967×
//     (simd), 0.976-0.989× (two threads, mt-relaxed).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/flash/flash_layout.h"

namespace webattention::kernels::flash {

// Where a thread's touches go: stored once per loop.
inline thread_local std::uint32_t touched_bytes = 0;

// A run of memory touched in `pieces` shares, piece(i) by the loop's step i.
class TouchAhead {
 public:
  TouchAhead(const void* first, std::size_t bytes, int pieces)
      : first_(static_cast<const volatile unsigned char*>(first)),
        bytes_(bytes),
        share_((bytes / static_cast<std::size_t>(std::max(pieces, 1)) + kLine - 1) / kLine * kLine) {}
  // Touches the first kLeadLines lines of each 4 KB page in piece i's share (a page's lead lines
  // in another piece's share are that piece's). Each step touches a lead line or jumps to the next
  // page, so a share with none (most of them) costs one step.
  void piece(int i) {
    const std::size_t at = static_cast<std::size_t>(i) * share_;
    if (at >= bytes_) return;
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(first_);
    const std::uintptr_t stop = base + std::min(bytes_, at + share_);
    for (std::uintptr_t a = (base + at + kLine - 1) & ~std::uintptr_t{kLine - 1}; a < stop;) {
      const std::uintptr_t in_page = a & (kPage - 1);
      if (in_page < kLeadLines * kLine) {
        sum_ += *reinterpret_cast<const volatile unsigned char*>(a);
        a += kLine;
      } else {
        a += kPage - in_page;
      }
    }
  }
  ~TouchAhead() { touched_bytes = sum_; }
  TouchAhead(const TouchAhead&) = delete;
  TouchAhead& operator=(const TouchAhead&) = delete;

 private:
  static constexpr std::size_t kLine = 64;
  static constexpr std::size_t kPage = 4096;
  static constexpr std::size_t kLeadLines = 8;
  const volatile unsigned char* first_;
  std::size_t bytes_, share_;
  std::uint32_t sum_ = 0;
};

// The V tile that holds `slot` (kv_layout.h: a tile's panels are one run), in `pieces` shares.
inline TouchAhead value_tile_ahead(const NarrowKv& c, int slot, int pieces) {
  const std::size_t bytes = storage_element_bytes(c.type);
  const int first = slot / kValueTile * kValueTile;
  const std::size_t tile = static_cast<std::size_t>(std::min(kValueTile, c.capacity - first)) * c.dv_pad * bytes;
  return TouchAhead(static_cast<const unsigned char*>(c.v) + c.value_index(first, 0) * bytes, tile, pieces);
}

// The keys of the tile after the n slots from `slot` (none after a tile shorter than kKeyTile;
// within the cache's capacity), in `pieces` shares.
inline TouchAhead next_key_tile_ahead(const NarrowKv& c, int slot, int n, int pieces) {
  const std::size_t bytes = storage_element_bytes(c.type);
  const int from = n < kKeyTile ? c.capacity : std::min(slot + n, c.capacity);
  const int to = std::min(from + kKeyTile, c.capacity);
  const std::size_t begin = key_index(c.dk, from, 0) * bytes, end = key_index(c.dk, to, 0) * bytes;
  return TouchAhead(static_cast<const unsigned char*>(c.k) + begin, end - begin, pieces);
}

}  // namespace webattention::kernels::flash
