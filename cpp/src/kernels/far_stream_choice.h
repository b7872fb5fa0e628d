// How many far panels (far_panels.h) a decode step's int8-activation loops read at once on this
// machine: kFarPanels or 2, chosen by timing both on the first calls. Which is faster depends on
// the CPU's prefetchers, not on anything WASM can ask: streamed from memory, a Xeon VM ran the
// int4 × int8 projection 1.14-1.27× faster in groups of 4 than in pairs, a Zen 5 VM 1.05-1.67×
// faster in pairs (docs/performance/decode_kernels.md#decode-kernels). The groups hold the same panels' same
// arithmetic either way, so the choice never changes a result's bits.
#pragma once

#include "kernels/far_panels.h"

namespace webattention::kernels {

class FarStreamChoice {
 public:
  // Calls before the timed ones (the engine tiers both loops up meanwhile), then timed ones per
  // group size. Until the choice the two sizes take turns in the Thue-Morse order (call n takes
  // pairs where n has an odd number of 1 bits): each size gets half of any periodic run of calls,
  // so a layer's projections (Q/K/V, then the output: every other call) meet both, where
  // alternating call by call would give each projection one size only.
  static constexpr int kWarmCalls = 32;
  static constexpr int kTimedCalls = 64;
  static constexpr int kPairs = 2;

  // The group size the next one-row call takes.
  int group() const {
    if (chosen_ != 0) return chosen_;
    return __builtin_popcount(static_cast<unsigned>(calls_)) % 2 == 0 ? kFarPanels : kPairs;
  }
  // Whether the next call's time is recorded (the caller reads its clock only then).
  bool timing() const { return chosen_ == 0 && calls_ >= kWarmCalls; }
  // A call in group size `group` took `ms` over `work` (its panels' blocks); ignored once chosen.
  void record(int group, double ms, double work) {
    if (chosen_ != 0) return;
    if (timing()) {
      Tally& t = group == kPairs ? pairs_ : groups_;  // both get kTimedCalls: 128 calls from 32
      t.ms += ms;
      t.work += work;
    }
    if (++calls_ == kWarmCalls + 2 * kTimedCalls) chosen_ = faster();
  }
  bool chosen() const { return chosen_ != 0; }

 private:
  struct Tally {
    double ms = 0.0;
    double work = 0.0;
  };
  // Pairs only where they did more work per millisecond; kFarPanels where a clock too coarse
  // measured nothing.
  int faster() const {
    if (pairs_.ms <= 0.0 || groups_.ms <= 0.0) return kFarPanels;
    return pairs_.work / pairs_.ms > groups_.work / groups_.ms ? kPairs : kFarPanels;
  }
  int calls_ = 0;
  int chosen_ = 0;  // 0 while timing
  Tally pairs_, groups_;
};

}  // namespace webattention::kernels
