// The storage the kernels stream starts on a cache line (webattention/aligned_bytes.h): packed
// weights of every storage type and a KV cache's keys and values, made or forked. From malloc's
// 8-byte alignment a quarter of the kernels' 16-byte loads straddled two cache lines, whichever
// quarter earlier allocations left (a decode step 5 % slower or not, build to build).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/kernels.h"
#include "webattention/aligned_bytes.h"

namespace webattention {
namespace {

bool on_cache_line(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kCacheLine == 0; }

TEST(Alignment, PackedWeightsOfEveryTypeStartOnACacheLine) {
  for (const StorageType type : {StorageType::f32, StorageType::f16, StorageType::bf16, StorageType::i8, StorageType::q4}) {
    // Odd sizes, and a small allocation first, so the next one would not land aligned by chance.
    for (const auto& [out, in] : {std::pair{9, 5}, {24, 64}, {33, 130}}) {
      std::vector<unsigned char> spacer(static_cast<std::size_t>(in) + 3);
      const std::vector<float> W(static_cast<std::size_t>(out) * in, 0.25f);
      const kernels::PackedLinear w = kernels::pack_linear(W.data(), StorageType::f32, out, in, type);
      EXPECT_TRUE(on_cache_line(w.storage.get())) << storage_type_name(type) << " (" << out << ", " << in << ")";
    }
  }
}

// What the KV cache's keys and values are allocated by: on a cache line, zeroed when asked.
TEST(Alignment, AlignedBytesStartOnACacheLineZeroedWhenAsked) {
  for (const std::size_t n : {std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{65}, std::size_t{4099}}) {
    std::vector<unsigned char> spacer(n % 13 + 1);
    const AlignedBytes zeroed = aligned_bytes(n, true), plain = aligned_bytes(n);
    EXPECT_TRUE(on_cache_line(zeroed.get())) << n;
    EXPECT_TRUE(on_cache_line(plain.get())) << n;
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(zeroed[i], 0) << n << " at " << i;
  }
}

}  // namespace
}  // namespace webattention
