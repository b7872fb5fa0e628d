// kernels/far_stream_choice.h: a decode step's group size taken in turns (the Thue-Morse order), then the one that did
// more work per millisecond, and groups of kFarPanels where the clock measured nothing.
#include "kernels/far_stream_choice.h"

#include <gtest/gtest.h>

#include <vector>

namespace webattention::kernels {
namespace {

// Runs the calls up to the choice, each of `work` blocks taking ms_per_block(size) per block;
// returns the sizes the calls took, in order.
template <class Ms>
std::vector<int> run_to_choice(FarStreamChoice& choice, double work, Ms&& ms_per_block) {
  std::vector<int> sizes;
  while (!choice.chosen()) {
    const int size = choice.group();
    sizes.push_back(size);
    choice.record(size, choice.timing() ? ms_per_block(size) * work : 0.0, work);
  }
  return sizes;
}

TEST(FarStreamChoice, TakesBothSizesInTurnThenTheFaster) {
  FarStreamChoice choice;
  const std::vector<int> sizes = run_to_choice(choice, 64.0, [](int size) { return size == 2 ? 0.001 : 0.0015; });
  ASSERT_EQ(sizes.size(), static_cast<std::size_t>(FarStreamChoice::kWarmCalls + 2 * FarStreamChoice::kTimedCalls));
  const int thue_morse[8] = {0, 1, 1, 0, 1, 0, 0, 1};  // 1: pairs
  int pairs = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i < 8) EXPECT_EQ(sizes[i], thue_morse[i] ? 2 : kFarPanels) << "call " << i;
    pairs += sizes[i] == 2;
    // Every other call (a layer's Q/K/V projection, then its output projection) meets both sizes.
    if (i == 7) EXPECT_EQ(sizes[0] + sizes[2] + sizes[4] + sizes[6], sizes[1] + sizes[3] + sizes[5] + sizes[7]);
  }
  EXPECT_EQ(pairs, static_cast<int>(sizes.size()) / 2);
  EXPECT_EQ(choice.group(), 2);
  EXPECT_FALSE(choice.timing());
  choice.record(kFarPanels, 1.0, 1.0);  // after the choice: no change
  EXPECT_EQ(choice.group(), 2);
}

TEST(FarStreamChoice, KeepsGroupsWhereTheyDoMoreWorkPerMillisecond) {
  FarStreamChoice choice;
  run_to_choice(choice, 64.0, [](int size) { return size == 2 ? 0.002 : 0.0015; });
  EXPECT_EQ(choice.group(), kFarPanels);
}

// Work per millisecond, not time per call: calls of different sizes (a layer's Q/K/V projection,
// then its output projection) fall to the two sizes in turn.
TEST(FarStreamChoice, ComparesRatesNotCallTimes) {
  FarStreamChoice choice;
  while (!choice.chosen()) {
    const int size = choice.group();
    const double work = size == 2 ? 300.0 : 100.0;  // pairs always get the larger calls
    choice.record(size, choice.timing() ? work * (size == 2 ? 0.001 : 0.0012) : 0.0, work);
  }
  EXPECT_EQ(choice.group(), 2);
}

TEST(FarStreamChoice, KeepsGroupsOfFourWhereTheClockMeasuredNothing) {
  FarStreamChoice choice;
  run_to_choice(choice, 64.0, [](int) { return 0.0; });
  EXPECT_EQ(choice.group(), kFarPanels);
}

}  // namespace
}  // namespace webattention::kernels
