// Argument checks shared by the entry points: each throws the typed error with the message format
// every other check uses ("<argument>: expected ..., got <value>").
#pragma once

#include <cstddef>

#include <cstdint>
#include <string>

namespace webattention {

// The most floats one buffer may hold here: its byte count must fit a ptrdiff_t (2^31 - 1 on
// wasm32). Sizes are computed in 64 bits and checked against it before any size_t sees them.
constexpr std::int64_t kMaxBufferFloats = static_cast<std::int64_t>(PTRDIFF_MAX / sizeof(float));

// MemoryError unless `floats` (computed in 64 bits) fits one buffer; `what` says what it is for.
void require_addressable(const char* argument, const char* what, std::int64_t floats);

// ShapeError unless value >= 1.
void require_positive(const char* argument, int value);

// ConfigError unless 0 <= value < count (a head index).
void require_index(const char* argument, int value, int count);

// A number in an error message as std::to_string(double) writes it ("%f": "-1.500000", "nan",
// "inf"; the sixth decimal may differ from printf's exact rounding at a halfway case), without
// printf's float formatting, which std::to_string(float) would link into the WASM module only for
// error text; magnitudes >= 1e15 as "1.234568e+20".
std::string format_number(double value);

}  // namespace webattention
