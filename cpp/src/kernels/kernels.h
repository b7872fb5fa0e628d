// The kernel interface. Each kernel family lives in its own file whose name says its ISA
// (`*_scalar.cpp` is portable C++; SIMD variants drop in beside it with the same signatures).
// Kernels assume validated shapes and never throw.
#pragma once

#include "webattention/attention.h"

namespace webattention::kernels {

// y[r, :] = x[r, :] · W_t + bias for r < rows. x is [rows, in] with row stride x_stride,
// W_t is the transposed PyTorch weight [in, out], y is [rows, out] contiguous. bias may be null.
void linear(const float* x, int rows, int in, std::ptrdiff_t x_stride, const float* w_t,
            const float* bias, int out, float* y) noexcept;

// Attention for one (batch b, head h) pair of the problem: every query row, streaming over the
// keys with one S-long score row of scratch (never an L×S matrix unless weights are asked for).
// `scores` has room for p.S floats.
void attention_head(const AttentionProblem& p, int b, int h, float* scores) noexcept;

}  // namespace webattention::kernels
