// The f32x4 mul+add limit of one x86-64 core with AVX-512VL, without the register limit of the
// C loop in simd_peak.c: 12 independent multiplies and 12 independent add chains per iteration
// over xmm0-23 (EVEX encoding reaches xmm16-31; V8 never uses them). Built and run by run.sh
// where /proc/cpuinfo lists avx512vl.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  const long iterations = argc > 1 ? atol(argv[1]) : 200000000;
  double best = 0;
  // Inputs xmm29-31 set to zero, so no multiply or add ever sees a denormal.
  __asm__ volatile("vxorps %%xmm29, %%xmm29, %%xmm29\n\tvxorps %%xmm30, %%xmm30, %%xmm30\n\t"
                   "vxorps %%xmm31, %%xmm31, %%xmm31" ::: "xmm29", "xmm30", "xmm31");
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = seconds();
    for (long n = 0; n < iterations; ++n) {
      __asm__ volatile(
      "vmulps %%xmm30, %%xmm31, %%xmm0\n\t"
      "vmulps %%xmm30, %%xmm31, %%xmm1\n\t"
      "vmulps %%xmm30, %%xmm31, %%xmm2\n\t"
      "vmulps %%xmm30, %%xmm31, %%xmm3\n\t"
      "vmulps %%xmm30, %%xmm31, %%xmm4\n\t"
      "vmulps %%xmm30, %%xmm31, %%xmm5\n\t"
      "vmulps %%xmm30, %%xmm31, %%xmm6\n\t"
      "vmulps %%xmm30, %%xmm31, %%xmm7\n\t"
      "vmulps %%xmm30, %%xmm31, %%xmm8\n\t"
      "vmulps %%xmm30, %%xmm31, %%xmm9\n\t"
      "vmulps %%xmm30, %%xmm31, %%xmm10\n\t"
      "vmulps %%xmm30, %%xmm31, %%xmm11\n\t"
      "vaddps %%xmm12, %%xmm29, %%xmm12\n\t"
      "vaddps %%xmm13, %%xmm29, %%xmm13\n\t"
      "vaddps %%xmm14, %%xmm29, %%xmm14\n\t"
      "vaddps %%xmm15, %%xmm29, %%xmm15\n\t"
      "vaddps %%xmm16, %%xmm29, %%xmm16\n\t"
      "vaddps %%xmm17, %%xmm29, %%xmm17\n\t"
      "vaddps %%xmm18, %%xmm29, %%xmm18\n\t"
      "vaddps %%xmm19, %%xmm29, %%xmm19\n\t"
      "vaddps %%xmm20, %%xmm29, %%xmm20\n\t"
      "vaddps %%xmm21, %%xmm29, %%xmm21\n\t"
      "vaddps %%xmm22, %%xmm29, %%xmm22\n\t"
      "vaddps %%xmm23, %%xmm29, %%xmm23\n\t"
      ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23");
    }
    const double g = iterations * 24.0 * 4.0 / (seconds() - t0) / 1e9;  // 24 instructions × 4 lanes
    if (g > best) best = g;
  }
  printf("%.1f GFLOP/s (best of 5)\n", best);
  return 0;
}
