// The thread pool behind the multi-threaded builds: every index exactly once, nested calls safe;
// work split over its threads gives the same bits as on one.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "parallel.h"
#include "test_util.h"
#include "webattention/multihead_attention.h"

namespace webattention {
namespace {

TEST(ParallelFor, CoversEveryIndexExactlyOnce) {
  for (int n : {1, 7, 64, 1000}) {
    for (int grain : {1, 3, 64, 2000}) {
      std::vector<std::atomic<int>> hits(n);
      parallel_for(n, grain, [&](int begin, int end) {
        for (int i = begin; i < end; ++i) hits[i]++;
      });
      for (int i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " grain=" << grain;
    }
  }
}

TEST(ParallelFor, NestedCallsRunAndRepeatedJobsDoNotMix) {
  std::atomic<long> sum{0};
  for (int round = 0; round < 200; ++round) {
    parallel_for(8, 1, [&](int begin, int end) {
      for (int i = begin; i < end; ++i) {
        parallel_for(4, 1, [&](int b, int e) { sum += (e - b) * (i + 1); });
      }
    });
  }
  EXPECT_EQ(sum.load(), 200L * 4 * 36);
  EXPECT_GE(thread_count(), 1);
}

// Decode steps of a module large enough for projection.cpp to split a step's projections over
// the threads by weight panels (and a prefill split by rows): the same outputs, bit for bit, as
// with one thread, for every weights type, and with int8 activations (whose rows the split
// quantises once for all its chunks). (With one thread in the build, both runs are serial.)
TEST(ParallelSplit, DecodeStepsGiveTheSameBitsOnAnyThreadCount) {
  const std::pair<StorageType, StorageType> settings[] = {
      {StorageType::f32, StorageType::f32}, {StorageType::f16, StorageType::f32}, {StorageType::i8, StorageType::f32},
      {StorageType::q4, StorageType::f32},  {StorageType::i8, StorageType::i8},   {StorageType::q4, StorageType::i8}};
  for (const auto& [weights, activations] : settings) {
    SCOPED_TRACE(std::string(storage_type_name(weights)) + " weights, " + storage_type_name(activations) + " activations");
    MhaConfig c;
    c.embed_dim = 512;  // each projection's weights reach projection.cpp's threshold for a split
    c.num_heads = 8;
    c.weights_dtype = weights;
    c.activations = activations;
    MultiHeadAttention m(c);
    std::mt19937 rng(5);
    for (const auto& spec : m.parameter_specs()) {
      const std::vector<float> w = testing::random_floats(spec.size(), rng, 0.1f);
      m.load_parameter(spec.name, w.data(), w.size());
    }
    // T >= 8 rows in one call (run 2) are split by rows (projection.cpp), through kernels::linear
    // as a whole: a check of the panel split's values, which runs 0 and 1 share.
    const int T = 9, E = c.embed_dim;
    const std::vector<float> x = testing::random_floats(static_cast<std::size_t>(T) * E, rng);
    std::vector<float> outputs[3];
    for (int run = 0; run < 3; ++run) {
      set_thread_limit(run == 0 ? 1 : thread_count());
      KvCacheConfig kc;
      kc.batch = 1;
      kc.max_length = T;
      auto cache = m.create_cache(kc);
      outputs[run].resize(static_cast<std::size_t>(T) * E);
      const auto step = [&](int at, int L) {
        MhaForwardArgs a;
        a.L = a.S = L;
        a.query = a.key = a.value = x.data() + at * E;
        a.output = outputs[run].data() + at * E;
        m.forward(a, *cache);
      };
      if (run == 2) {
        step(0, T);
        continue;
      }
      step(0, 3);  // a prefill, then one position at a time
      for (int t = 3; t < T; ++t) step(t, 1);
    }
    set_thread_limit(thread_count());
    EXPECT_EQ(outputs[0], outputs[1]);
    // The same rows' projections give the same bits in a prefill; attention's order may differ.
    for (std::size_t i = 0; i < outputs[0].size(); ++i) ASSERT_NEAR(outputs[2][i], outputs[0][i], 1e-4f) << "at " << i;
  }
}

}  // namespace
}  // namespace webattention
