// A decode step's projections alone: one input row (or `rows`: a prefill's) times the four weight
// matrices of an (E, h, hkv) attention layer (Q [h·64, E], K and V [hkv·64, E], out [E, h·64]),
// through the package's projection kernel (kernels::linear, linked from a module's core library),
// stored as one weights type. compare.mjs times run() in Node or a browser. Weights uniform in ±1/sqrt(in), as
// bench/decode/decode.mjs's (about 0.2 % of them f16 subnormals), x uniform in ±1.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/kernels.h"

using namespace webattention;
using namespace webattention::kernels;

namespace {
std::vector<PackedLinear> layers;
std::vector<float> x, y;
double weight_count = 0;
int input_rows = 1;
}  // namespace

extern "C" {

// `copies` layers of (E, h, hkv) stored as `type` (a StorageType: 0 f32, 1 f16, 2 bf16, 3 int8, 4
// int4), plus kInt8Activations for create()'s activations 'int8'. One layer's weights fit the L3;
// 24 copies are a model's, streamed from memory as in bench/decode/decode_stack.mjs. `rows` input
// rows per call: 1 for a decode step, more for a prefill's block of rows.
constexpr int kInt8Activations = 16;
__attribute__((used)) void setup(int E, int h, int hkv, int type, int copies, int rows) {
  const int outs[4] = {h * 64, hkv * 64, hkv * 64, E}, ins[4] = {E, E, E, h * 64};
  std::mt19937 rng(1);
  layers.clear();
  weight_count = 0;
  for (int m = 0; m < 4 * copies; ++m) {
    const int i = m % 4;
    const float bound = 1.0f / std::sqrt(static_cast<float>(ins[i]));
    std::uniform_real_distribution<float> value(-bound, bound);
    std::vector<float> W(static_cast<std::size_t>(outs[i]) * ins[i]);
    for (float& w : W) w = value(rng);
    layers.push_back(pack_linear(W.data(), StorageType::f32, outs[i], ins[i], static_cast<StorageType>(type & ~kInt8Activations)));
    if ((type & kInt8Activations) != 0) use_int8_activations(layers.back());
    weight_count += static_cast<double>(W.size());
  }
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  input_rows = rows;
  x.resize(static_cast<std::size_t>(rows) * std::max(E, h * 64));
  for (float& v : x) v = value(rng);
  y.assign(x.size() + 8 * rows, 0.0f);
}

// Multiply-adds per step: weights times input rows.
__attribute__((used)) double multiply_adds() { return weight_count * input_rows; }

// `steps` decode steps' projections, back to back.
__attribute__((used)) float run(int steps) {
  for (int s = 0; s < steps; ++s) {
    for (const PackedLinear& w : layers) {
      const LinearTarget target{&w, y.data(), w.out};
      linear(x.data(), input_rows, w.in, &target, 1);
    }
  }
  return y[0];
}

}  // extern "C"
