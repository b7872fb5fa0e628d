#include "webattention/errors.h"

#include <cmath>

#include "checks.h"

namespace webattention {

void require_positive(const char* argument, int value) {
  if (value < 1) {
    throw ShapeError(argument, std::string(argument) + ": expected a size >= 1, got " +
                                   std::to_string(value));
  }
}

void require_index(const char* argument, int value, int count) {
  if (value < 0 || value >= count) {
    throw ConfigError(argument, std::string(argument) + ": expected an integer in [0, " +
                                    std::to_string(count) + "), got " + std::to_string(value));
  }
}

void require_addressable(const char* argument, const char* what, std::int64_t floats) {
  if (floats > kMaxBufferFloats) {
    throw MemoryError(argument, std::string(argument) + ": " + what + " needs " +
                                    std::to_string(floats) + " floats, more than one buffer can hold here (" +
                                    std::to_string(kMaxBufferFloats) + ")");
  }
}

std::string format_shape(const std::vector<int>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

namespace {

// A magnitude < 1e15 with six decimals, rounded to nearest: its whole part and its fraction (both
// exact in a double) apart, so that the fraction keeps every bit a product by 10⁶ would round off.
std::string fixed6(double magnitude) {
  long long whole = static_cast<long long>(std::floor(magnitude));
  long long micros = static_cast<long long>(std::nearbyint((magnitude - std::floor(magnitude)) * 1e6));
  if (micros == 1000000) ++whole, micros = 0;
  const std::string fraction = std::to_string(micros);
  return std::to_string(whole) + "." + std::string(6 - fraction.size(), '0') + fraction;
}

}  // namespace

std::string format_number(double value) {
  const std::string sign = std::signbit(value) ? "-" : "";
  if (std::isnan(value)) return sign + "nan";
  if (std::isinf(value)) return sign + "inf";
  double magnitude = std::fabs(value);
  if (magnitude < 1e15) return sign + fixed6(magnitude);
  int exponent = 0;
  for (; magnitude >= 10.0; magnitude /= 10.0) ++exponent;
  std::string mantissa = fixed6(magnitude);
  if (mantissa[0] == '1' && mantissa[1] == '0') mantissa = "1.000000", ++exponent;  // 9.9999995 rounded up
  return sign + mantissa + "e+" + std::to_string(exponent);
}

}  // namespace webattention
