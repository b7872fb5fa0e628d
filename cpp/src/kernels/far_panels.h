// Which panels (weights, or a KV cache's) a decode step's loops read together. A step (one input row) reads each
// panel once, from memory in a model, and one thread keeps only so many reads in flight for one
// sequential stream: a loop over G panels whose starts lie a G-th of the range apart reads G
// sequential streams at once, where the memory system keeps more reads in flight. Against G
// panels side by side (one panel's width apart, 8-64 KB), weights streamed from memory: the
// float32-activation loops 1.04-1.34× (f32 0.97-1.11×). The int8-activation pairs ran
// 1.02-1.50× one panel at a time, where a pair side by side ran 0.61-0.85×; int8 × int8 in 4
// ran 1.00-1.15× its pair, int4 × int8 1.14-2.64× on a Xeon VM (0.86-0.93× relaxed on a Zen 3 VM)
// (docs/performance/decode_kernels.md#decode-kernels). Every one-row projection loop takes its groups here, of 4
// panels: the int8-activation kernels (q8_panel_groups_simd128.h: 2 for a range under 16
// panels), f32 and the float32-activation readers of f16, bf16, int8 and int4 (linear_simd128.h);
// f16 and int8 (relaxed modules) take kFarPanelsInMemory. A decode step's one-row attention loops
// read a cache's panels kFarCachePanels at once.
#pragma once

#include <type_traits>

namespace webattention::kernels {

// Panels a one-row loop's group reads at once, each its own stream (the int8-activation kernels:
// this or pairs, whichever their first calls ran faster, far_stream_choice.h). Against pairs, weights
// streamed from memory (COPIES=24 ROWS=1 bash bench/decode/projection/run.sh, A/B): int8 × int8
// 1.00-1.15× on a Zen 3 VM (8 ran 0.52-0.64×); int4 × int8 on a Xeon VM with AVX-512 1.14-1.27×
// relaxed and 1.9-2.6× SIMD128 (its pairs streamed at a third of their in-cache rate there), where
// the Zen 3 VM ran the relaxed int4 step 0.86-0.93×; int4 with float32 activations 1.40-1.68×.
constexpr int kFarPanels = 4;

// Panels a one-row loop whose sums live in memory between blocks of rows takes at once
// (linear_simd128.h's one_row_pairs_in_memory: kFarPanels of them in registers a block, then the
// next kFarPanels): twice the streams for no more registers. The 24-layer decode stack at (2048,
// 32, 8) on a Xeon VM, 8 against 4 (builds alternated; docs/performance/decode_kernels.md#decode-kernels):
// f16 weights with two threads in Node 1.59-1.65x float32 against 1.54-1.60x (Chromium and
// Firefox alike within their noise), with one 0.91-1.01x the time; int8 weights in the relaxed
// modules 2.21-2.37x against 2.12-2.23x with two threads, 0.95-1.00x the time with one, but in the
// SIMD128 ones 1.01-1.05x as long (its loop has no fused multiply-add, and its operations bound
// it), so int8 takes 8 in the relaxed modules only.
constexpr int kFarPanelsInMemory = 8;

// Panels [begin, end) as group(p0, stride) for the groups {p0, p0 + stride, ..., p0 + (G - 1) ·
// stride} (stride: the range's G-th, so the groups' G streams lie that far apart), then
// single(p) for each of the fewer than G panels left at the end. The groups cover [begin, begin +
// G · stride) and each of its panels once; the weights' last panel, the only one narrower than
// kPanelWidth, is the last one of its group or a single.
template <int G, class Group, class Single>
void far_panel_groups(int begin, int end, Group&& group, Single&& single) {
  const int stride = (end - begin) / G;
  for (int i = 0; i < stride; ++i) group(begin + i, stride);
  for (int p = begin + G * stride; p < end; ++p) single(p);
}

// Panels a decode step's one-row attention loops (multi-head attention: one query row per K/V
// head) read at once: a key tile's panels (f32_attention_simd128.cpp's row_scores,
// narrow_rows_simd128.h's) or a value tile's column panels (row_pv), each its own stream, the
// row's broadcasts shared. 8 layers at (768, 12, 12) over caches of 2048 slots on a Xeon VM
// (AVX-512), builds alternated, against one panel at a time: f32 caches 0.82-0.92x the time, f16
// 0.76-0.86x, int8 0.85-0.99x, in Node, Chromium and Firefox, with one thread and two; 4 panels ran
// as 2 (docs/performance/decode_kernels.md#decode-kernels). Not measured on AMD, where 2 or 4 key panels side by
// side (adjacent, one stream read in pieces) ran slower than one.
constexpr int kFarCachePanels = 2;

// far_panel_groups with one body for the groups and the panels left: body(kCount, p0, stride),
// kCount a std::integral_constant, G for each group (panels p0, p0 + stride, ...) and 1 for each
// panel left (stride 1, unused), so that a caller writes its loop once, templated on the count.
template <int G, class Body>
void far_panel_counts(int begin, int end, Body&& body) {
  far_panel_groups<G>(
      begin, end, [&](int p0, int stride) { body(std::integral_constant<int, G>{}, p0, stride); },
      [&](int p) { body(std::integral_constant<int, 1>{}, p, 1); });
}

}  // namespace webattention::kernels
