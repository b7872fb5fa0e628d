// Multi-head attention with the semantics and state-dict layout of
// torch.nn.MultiheadAttention(batch_first=True) (docs: attention-math §3, §4).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "webattention/mask.h"

namespace webattention::kernels {
struct PackedLinear;
}

namespace webattention {

struct MhaConfig {
  int embed_dim = 0;
  int num_heads = 1;
  int kdim = 0;            // key input width; 0 = embed_dim
  int vdim = 0;            // value input width; 0 = embed_dim
  int head_dim = 0;        // per-head query/key width d_k; 0 = embed_dim / num_heads
  int value_head_dim = 0;  // per-head value width d_v; 0 = head_dim default (embed_dim / num_heads)
  bool bias = true;
};

// One state-dict entry the module expects: its PyTorch key and shape.
struct ParameterSpec {
  std::string name;
  std::vector<int> shape;
  std::size_t size() const;
};

// attention-math §5: per head, (x W_i^Q)(y W_i^K)ᵀ = x W_i yᵀ with W_i = W_i^Q W_i^Kᵀ, an
// embed_dim × kdim matrix of rank <= d_k. The factored form stores (embed_dim + kdim)·d_k numbers
// against embed_dim·kdim for W_i, and is what the kernels apply. (With biases the scores also
// gain terms linear in x and y; W_i is the bilinear part.)
struct BilinearForm {
  int rows = 0, cols = 0;     // embed_dim, kdim
  std::vector<float> matrix;  // W_i, row-major [rows, cols]
  int rank = 0;               // numerical rank of W_i
  std::size_t factored_parameters = 0;
  std::size_t full_parameters = 0;
};

// The inputs of one forward call, batch-first: query [B, L, E], key [B, S, kdim],
// value [B, S, vdim]; output [B, L, E]. weights (optional) [B, h, L, S] or, averaged, [B, L, S].
struct MhaForwardArgs {
  int batch = 1, L = 0, S = 0;
  const float* query = nullptr;
  const float* key = nullptr;
  const float* value = nullptr;
  MaskArg key_padding_mask;  // [B, S]
  MaskArg attn_mask;         // [L, S] or [B*h, L, S]
  bool causal = false;
  float* output = nullptr;
  float* weights = nullptr;
  bool average_weights = true;
};

class MultiHeadAttention {
 public:
  explicit MultiHeadAttention(const MhaConfig& config);  // throws ConfigError
  ~MultiHeadAttention();
  MultiHeadAttention(MultiHeadAttention&&) noexcept;
  MultiHeadAttention& operator=(MultiHeadAttention&&) noexcept;

  const MhaConfig& config() const { return config_; }

  // The entries load_parameter() accepts, in PyTorch's state_dict() order. When key, value and
  // query widths and head dims are all equal PyTorch packs W_Q, W_K, W_V into in_proj_weight
  // [3E, E]; otherwise they are q_proj_weight, k_proj_weight and v_proj_weight.
  const std::vector<ParameterSpec>& parameter_specs() const { return specs_; }

  // Copies one entry in (`count` floats, row-major as PyTorch stores it). Throws
  // StateDictError for an unknown name or a wrong count.
  void load_parameter(const std::string& name, const float* data, std::size_t count);

  // Names of the entries not loaded yet; forward() refuses to run until this is empty.
  std::vector<std::string> missing_parameters() const;

  void forward(const MhaForwardArgs& args) const;  // throws ShapeError

  // W_i of one head from the loaded weights. Throws ConfigError for a head out of range.
  BilinearForm head_bilinear_form(int head) const;

  // Scratch size forward() needs for these lengths, in floats (projected Q, K, V and heads).
  std::size_t scratch_floats(int batch, int L, int S) const;

 private:
  MhaConfig config_;
  int qk_width_ = 0;  // h·d_k
  int v_width_ = 0;   // h·d_v
  std::vector<ParameterSpec> specs_;
  std::vector<bool> loaded_;
  // Projection weights packed for the kernels at load time (biases inside).
  std::unique_ptr<kernels::PackedLinear> wq_, wk_, wv_, wo_;
  mutable std::vector<float> scratch_;
};

}  // namespace webattention
