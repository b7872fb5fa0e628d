// The fuzz input as the harnesses read it (tests/fuzz/*_fuzz.cpp): small integers, coins and
// float values from its bytes, front to back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

namespace webattention::fuzz {

// Reads the input front to back; past its end every read gives 0, but value() goes on with a
// pseudo-random sequence seeded by the input's length: a long sequence drawn from a short input
// would otherwise be one repeated value (identical keys), which hides what long sequences test.
class Bytes {
 public:
  Bytes(const std::uint8_t* data, std::size_t size)
      : data_(data), size_(size), filler_((static_cast<std::uint32_t>(size) * 2654435761u) | 1u) {}
  std::uint8_t u8() { return at_ < size_ ? data_[at_++] : 0; }
  int in(int lo, int hi) { return lo + u8() % (hi - lo + 1); }  // [lo, hi]
  bool coin() { return u8() & 1; }
  // Mostly values in [-4, 4); bytes 0xFD, 0xFE, 0xFF are NaN, +Infinity, -Infinity.
  float value(bool* non_finite) {
    if (at_ >= size_) return filler_value();
    const std::uint8_t b = u8();
    if (b >= 0xFD) {
      *non_finite = true;
      if (b == 0xFD) return std::numeric_limits<float>::quiet_NaN();
      return b == 0xFE ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
    }
    return (static_cast<int>(b) - 126) / 32.0f;
  }

  // Past the end: finite values of the same grid (xorshift32), never NaN or an infinity.
  float filler_value() {
    filler_ ^= filler_ << 13;
    filler_ ^= filler_ >> 17;
    filler_ ^= filler_ << 5;
    return (static_cast<int>((filler_ >> 8) % 0xFD) - 126) / 32.0f;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
  std::uint32_t filler_;  // never 0: xorshift's fixed point
};

}  // namespace webattention::fuzz
