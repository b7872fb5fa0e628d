// The state-dict entries a MultiHeadAttention may expect: PyTorch's names (nn.MultiheadAttention's,
// and beyond it the qk-norm weights and the attention sinks), in state_dict() order. The one list
// of them in C++: mha_config.cpp builds a module's parameter_specs() from it and mha_weights.cpp
// loads by it; JS's own list (web/src/storage/state_dict_entries.js) is checked against it through
// the binding (stateDictEntryNames(), tests/js/state_dict_entries.test.js).
#pragma once

#include <cstring>

namespace webattention {

enum class StateDictEntry : int {
  kInProjWeight,
  kQProjWeight,
  kKProjWeight,
  kVProjWeight,
  kInProjBias,
  kQProjBias,
  kKProjBias,
  kVProjBias,
  kOutProjWeight,
  kOutProjBias,
  kQNormWeight,
  kKNormWeight,
  kSinks,
  kCount,
};

inline constexpr const char* kStateDictEntryNames[] = {
    "in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias",
    "q_proj_bias",    "k_proj_bias",   "v_proj_bias",   "out_proj.weight", "out_proj.bias",
    "q_norm.weight",  "k_norm.weight", "sinks",
};
static_assert(sizeof(kStateDictEntryNames) / sizeof(*kStateDictEntryNames) ==
              static_cast<int>(StateDictEntry::kCount));

constexpr const char* entry_name(StateDictEntry e) { return kStateDictEntryNames[static_cast<int>(e)]; }

// The entry a name stands for, or kCount for a name that is none of them.
inline StateDictEntry state_dict_entry(const char* name) {
  int i = 0;
  while (i < static_cast<int>(StateDictEntry::kCount) && std::strcmp(kStateDictEntryNames[i], name) != 0) ++i;
  return static_cast<StateDictEntry>(i);
}

}  // namespace webattention
