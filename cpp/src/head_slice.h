// The Q/K/V weights of a head range [begin, end), packed for those heads' columns (and their K/V
// heads') only, so that the projection kernel runs over a worker's share of the columns.
// MultiHeadAttention::forward_heads() keeps a few (mha_weights.cpp makes them).
#pragma once

#include "kernels/kernels.h"
#include "webattention/multihead_attention.h"

namespace webattention {

struct MultiHeadAttention::HeadSlice {
  int begin = 0, end = 0;
  kernels::PackedLinear q, k, v;
};

}  // namespace webattention
