// The thread pool behind the multi-threaded builds: every index exactly once, nested calls safe.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "parallel.h"

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

}  // namespace
}  // namespace webattention
