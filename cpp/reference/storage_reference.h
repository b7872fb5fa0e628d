// The oracle's storage rules (docs/attention-math/storage.md §11), written from the definitions in double
// precision, independently of the core's bit-level conversions (cpp/src/kernels/storage_convert.h): the
// values a module or cache of a narrow storage type holds, for the reference to compute with.
#pragma once

#include <vector>

#include "webattention/storage_type.h"

namespace webattention::reference {

// f32 value x rounded to f16 / bf16 (nearest, ties to even; NaN stays NaN; overflow to ±Inf).
float round_to_f16(float x);
float round_to_bf16(float x);

// The stored values of a matrix [rows, cols] (row-major) in `type`: rounded for f16 / bf16;
// for int8 each row quantised in blocks of `block` values (the last one shorter), each with its
// own scale max|x| / 127, and dequantised (a block with a non-finite value is NaN); for int4 the
// same blocks by llama.cpp's q4_0 rule (docs/attention-math/storage.md §11).
std::vector<float> stored(const std::vector<float>& x, int rows, int cols, StorageType type, int block);

// A projection's input rows [rows, cols] under activations 'int8' (docs/attention-math/storage.md §11): each
// row in blocks of `block` values, d = max|x| / 127 and q = round(x / d) (halves away from zero;
// both f32 operations), each value q · d exactly; a block with a non-finite value is NaN.
std::vector<double> int8_activations(const std::vector<float>& x, int rows, int cols, int block);

// For inputs that are themselves computed (an attention output): a value whose x / d lies within
// kAmbiguousCode of a rounding boundary may round either way in a float32 kernel whose x differs
// from the reference's in the last bits; its slack is d (one step), 0 elsewhere. A test adds
// Σ_k |w_k| · slack_k to the tolerance of an output that such an input feeds. `ambiguous`: a wider
// window for inputs further apart (a fuzzer's extreme options).
constexpr double kAmbiguousCode = 0.02;
std::vector<double> int8_activation_slack(const std::vector<double>& x, int rows, int cols, int block,
                                          double ambiguous = kAmbiguousCode);

}  // namespace webattention::reference
