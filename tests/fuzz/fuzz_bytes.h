// The fuzz input as the harnesses read it (tests/fuzz/*_fuzz.cpp): small integers, coins and
// float values from its bytes, front to back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

namespace webattention::fuzz {

// Reads the input front to back; past its end every read gives 0.
class Bytes {
 public:
  Bytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint8_t u8() { return at_ < size_ ? data_[at_++] : 0; }
  int in(int lo, int hi) { return lo + u8() % (hi - lo + 1); }  // [lo, hi]
  bool coin() { return u8() & 1; }
  // Mostly values in [-4, 4); bytes 0xFD, 0xFE, 0xFF are NaN, +Infinity, -Infinity.
  float value(bool* non_finite) {
    const std::uint8_t b = u8();
    if (b >= 0xFD) {
      *non_finite = true;
      if (b == 0xFD) return std::numeric_limits<float>::quiet_NaN();
      return b == 0xFE ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
    }
    return (static_cast<int>(b) - 126) / 32.0f;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

}  // namespace webattention::fuzz
