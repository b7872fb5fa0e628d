// Multi-head attention with the semantics and state-dict layout of
// torch.nn.MultiheadAttention(batch_first=True) (docs/attention-math.md §3, §4).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "webattention/kv_cache.h"
#include "webattention/mask.h"
#include "webattention/state_dict_entries.h"
#include "webattention/storage_type.h"

namespace webattention::kernels {
struct PackedLinear;
}

namespace webattention {

struct AttentionProblem;  // the kernels' problem (private: cpp/src/kernels/attention_problem.h)

// Which projections add a bias: PyTorch's `bias` is all four; Qwen2 has q, k and v only. A bool
// sets all four (`config.bias = false`).
struct ProjectionBias {
  bool q = true, k = true, v = true, out = true;
  ProjectionBias() = default;
  ProjectionBias(bool all) : q(all), k(all), v(all), out(all) {}  // NOLINT: implicit on purpose
  bool all_inputs() const { return q && k && v; }
};

struct MhaConfig {
  int embed_dim = 0;
  int num_heads = 1;
  int kdim = 0;            // key input width; 0 = embed_dim
  int vdim = 0;            // value input width; 0 = embed_dim
  int head_dim = 0;        // per-head query/key width d_k; 0 = embed_dim / num_heads
  int value_head_dim = 0;  // per-head value width d_v; 0 = head_dim default (embed_dim / num_heads)
  ProjectionBias bias{true};  // all four
  // Grouped-query attention (docs/attention-math/heads.md §7): K/V heads, 0 = num_heads. Query head i
  // reads K/V head i / (num_heads / num_kv_heads); 1 is multi-query attention.
  int num_kv_heads = 0;
  // Rotary position embedding (§8) on the first rotary_dim features of every query and key head
  // (even, <= head_dim); 0 = none. Half-split pairs (x_j, x_{j+dim/2}) unless interleaved
  // (pairs (x_2j, x_2j+1)); θ_j = rotary_base^(-2j/rotary_dim).
  int rotary_dim = 0;
  double rotary_base = 10000.0;
  bool rotary_interleaved = false;
  // RoPE frequency scaling for contexts past the trained one (docs/attention-math/decoding.md §8):
  // kNone; kLinear: every θ_j / factor (positions divided by factor); kLlama3: Llama 3.1's rule —
  // wavelengths 2π/θ_j shorter than original_max_positions / high_freq_factor kept, longer than
  // original_max_positions / low_freq_factor divided by factor, those between blended smoothly.
  enum class RotaryScaling { kNone = 0, kLinear = 1, kLlama3 = 2 };
  RotaryScaling rotary_scaling = RotaryScaling::kNone;
  double rotary_factor = 1.0;
  double rotary_low_freq_factor = 1.0;
  double rotary_high_freq_factor = 4.0;
  double rotary_original_max_positions = 8192.0;
  // The score scale (docs/attention-math/basics.md §3); none = 1/sqrt(head_dim). Gemma sets its own
  // (query_pre_attn_scalar^-1/2). A given scale is used as it is: it must be finite and > 0 as
  // float32 (a value that rounds to 0 or overflows there is a ConfigError, never the default).
  std::optional<double> scale;
  // Logit softcapping (Gemma 2): score <- softcap * tanh(score / softcap) after the scale and
  // before the masks; 0 = none.
  double softcap = 0.0;
  // Attention sinks (gpt-oss; ORT's smooth softmax with zeros): a logit per query head, state-dict
  // entry "sinks" [num_heads], that joins its softmax's denominator and carries no value:
  // p_j = exp(s_j) / (Σ_k exp(s_k) + exp(sink_h)). A +Inf sink is refused at load_parameter();
  // -Inf is no sink.
  bool sinks = false;
  // Qwen3 / Gemma 3's RMSNorm of every query and key head after its projection (and bias), before
  // RoPE: x <- x / sqrt(mean(x²) + qk_norm_eps) · w, w the entries "q_norm.weight" and
  // "k_norm.weight" [head_dim].
  bool qk_norm = false;
  double qk_norm_eps = 1e-6;
  // How the weight matrices are stored (docs/attention-math/storage.md §11): f32, f16 or bf16 (rounded
  // to nearest-even), int8 or int4 (quantised in blocks of 32 input values). Biases stay f32.
  StorageType weights_dtype = StorageType::f32;
  // The projections' inputs (docs/attention-math/storage.md §11): f32, exact on the stored weights; or
  // i8 (int8 or int4 weights only, else ConfigError "activations"): each input row quantised per
  // block of 32 by llama.cpp's q8_0 rule, each block's dot product with the weight codes in int32.
  StorageType activations = StorageType::f32;
};

// One state-dict entry the module expects: its PyTorch key and shape.
struct ParameterSpec {
  std::string name;
  std::vector<int> shape;
  std::size_t size() const;
};

// docs/attention-math/heads.md §5: per head, (x W_i^Q)(y W_i^K)ᵀ = x W_i yᵀ with W_i = W_i^Q W_i^Kᵀ, an
// embed_dim × kdim matrix of rank <= d_k. The factored form stores (embed_dim + kdim)·d_k numbers
// against embed_dim·kdim for W_i, and is what the kernels apply. (With biases the scores also
// gain terms linear in x and y; W_i is the bilinear part.)
struct BilinearForm {
  int rows = 0, cols = 0;     // embed_dim, kdim
  std::vector<float> matrix;  // W_i, row-major [rows, cols]
  int rank = 0;               // numerical rank of W_i (docs/attention-math/heads.md §5's tolerance)
  std::vector<double> singular_values;  // of W_i, largest first: min(d_k, E, kdim) of them
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
  MaskArg attn_mask;         // [L, S] or [B*h, L, S]; with a cache, forward(args, cache) says
  bool causal = false;
  float* output = nullptr;
  float* weights = nullptr;
  bool average_weights = true;
  // [B, L] (optional, rotary modules only): the rotary position of each query row and of the key
  // row beside it (without a cache S must equal L), instead of its row index (plus the cache's
  // length). Integers >= 0, below the table's rows with a given table. Masks, causality and the
  // cache's order still follow the rows (docs/attention-math/decoding.md §8); a cache's window counts in
  // the ids (§9: ids other than the rows' own need one pass and ids >= the row's length).
  const std::int32_t* position_ids = nullptr;
  // forward(args, cache) only: the cache rows the call's `batch` rows append to and attend over,
  // one each, strictly increasing, each < the cache's batch size (the rows still decoding). Each
  // row's positions continue from that row's own length. Null: every row of the cache, in order.
  const std::int32_t* rows = nullptr;
};

class MultiHeadAttention {
 public:
  explicit MultiHeadAttention(const MhaConfig& config);  // throws ConfigError
  ~MultiHeadAttention();
  MultiHeadAttention(MultiHeadAttention&&) noexcept;  // keeps its caches' ownership
  MultiHeadAttention& operator=(MultiHeadAttention&&) noexcept;

  const MhaConfig& config() const { return config_; }
  // RoPE's θ_j, j < rotary_dim / 2, scaling applied (docs/attention-math/decoding.md §8; rotary.cpp).
  const std::vector<double>& rotary_thetas() const { return rotary_frequencies_; }

  // The entries load_parameter() accepts, in PyTorch's state_dict() order (their names:
  // state_dict_entries.h). When key, value and query widths and head dims are all equal PyTorch
  // packs W_Q, W_K, W_V into in_proj_weight [3E, E]; otherwise they are q_proj_weight, k_proj_weight and v_proj_weight. The input biases
  // are in_proj_bias when q, k and v all have one, else q_proj_bias, k_proj_bias, v_proj_bias
  // for those that do.
  const std::vector<ParameterSpec>& parameter_specs() const { return specs_; }

  // Copies one entry in (`count` floats, row-major as PyTorch stores it). Throws
  // StateDictError for an unknown name, a wrong count or a +Inf sink (nothing is changed then).
  void load_parameter(const std::string& name, const float* data, std::size_t count);
  // The same from `count` elements of `source` type (f32, or f16 / bf16 bit patterns), converted
  // to the module's weights_dtype (§11; bits kept as they are when the types match, with no f32
  // copy). Throws ConfigError ("source_dtype") for int8 and int4, StateDictError for a non-finite
  // value bound for int8 or int4 storage (naming the entry, the row and the block) and for a +Inf sink.
  void load_parameter(const std::string& name, const void* data, std::size_t count, StorageType source);
  // A weight matrix entry quantised already, taken as stored (a GGUF Q8_0 / Q4_0 or ORT
  // MatMulNBits checkpoint, its blocks converted to this form without loss): `count` codes
  // row-major as PyTorch stores the weight (int8, or one code 0-15 per byte for int4), one f32
  // scale per block of 32 along a row ([rows][ceil(cols / 32)]), and for int4 one zero point 0-15
  // per block, laid out as the scales (nullptr for int8). The module then computes with the
  // values (code - zero point) · scale, exactly. `type` must be the module's weights_dtype (int8
  // or int4), else ConfigError ("weightsDtype"); StateDictError for an unknown name, a wrong
  // count, an entry that is not a weight matrix, a non-finite scale or a code or zero point out of
  // range (nothing is changed then).
  struct QuantisedEntry {
    const void* codes;
    const float* scales;
    const std::uint8_t* zero_points;
  };
  void load_quantised_parameter(const std::string& name, const QuantisedEntry& entry, std::size_t count, StorageType type);
  // An f32 weight entry loaded into an f32 module with no copy of it besides the caller's (the JS
  // side must copy a caller's array into WASM memory anyway: written straight into the storage,
  // a load needs one copy of the weights instead of two). begin_load_in_place() makes the entry's
  // new storage and returns where each part of its values goes: elements [offset, offset +
  // count) of the entry, row-major as PyTorch stores it, at `to`. The caller writes them there;
  // finish_load_in_place() packs them where they lie and puts them in, as load_parameter() would.
  // Returns no parts, changing nothing, where this does not apply (another source or storage
  // type; a bias or a vector): load_parameter() then. Throws StateDictError for an unknown name or
  // a wrong count, std::bad_alloc when there is no room (nothing is changed either way). The
  // weights stay as they were until finish; another begin drops the parts not finished.
  struct InPlacePart {
    float* to;
    std::size_t offset, count;
  };
  std::vector<InPlacePart> begin_load_in_place(const std::string& name, std::size_t count, StorageType source);
  void finish_load_in_place();
  // An entry as loaded, widened to f32 (`count` floats, row-major as PyTorch stores it): for a
  // module with f32 weights, exactly the values load_parameter() took (in f32). Throws
  // StateDictError for an unknown name, a wrong count or an entry not loaded yet.
  void read_parameter(const std::string& name, float* out, std::size_t count) const;
  // Forgets that any entry was loaded and frees the weights' storage: forward() refuses, naming a
  // missing entry, as before the first load, until every entry is loaded again. For a state dict
  // whose load failed part-way (memory ran out after some entries went in: a module holding a mix
  // of two state dicts must not compute), and for a module whose weights live on the GPU only
  // (create()'s hostWeights: false), after each load.
  void forget_parameters();

  // RoPE from a given table instead of θ_j (a module with rotary_dim > 0): cos and sin [positions,
  // rotary_dim / 2], row p for position p. Forwards that would rotate a position past the table
  // throw ShapeError. Throws ConfigError without rotary or for positions < 1.
  void set_rotary_table(const float* cos, const float* sin, int positions);

  // Names of the entries not loaded yet; forward() refuses to run until this is empty.
  std::vector<std::string> missing_parameters() const;

  // The whole module: output = project_output(forward_heads(args, 0, num_heads)).
  void forward(const MhaForwardArgs& args) const;  // throws ShapeError, StateDictError

  // Storage for incremental decoding with this module (webattention/kv_cache.h), allocated once.
  // Throws ConfigError for bad sizes, MemoryError when it cannot be addressed or allocated.
  std::unique_ptr<KvCache> create_cache(const KvCacheConfig& config) const;

  // One step of incremental decoding: appends the args.L new positions of key and value
  // (args.S must equal args.L) to `cache` and attends over everything in it (§9): the query at
  // position p = cache.length() + i sees the cached keys at positions <= p, and with a window
  // only those > p - window. args.key_padding_mask is [B, length after the append];
  // args.causal is implied. args.attn_mask (optional) is a verification mask among the L new
  // positions, on top of the causal rule: [L, L], [B, L, L] or [B*h, L, L], element (i, j) for
  // query row i and new key j (cached keys are not covered). Weights, when asked for, are
  // [B, (h,) L, length after the append]. Throws before changing the cache.
  // A batched cache keeps one length per row: args.rows lists the rows a call appends to (else
  // every row), and each row's queries see that row's positions only, from its own length on; the
  // mask and weights' columns are then the longest listed row's length after the append (a
  // shorter row's later columns: weight 0).
  void forward(const MhaForwardArgs& args, KvCache& cache) const;
  // Keeps only positions indices[0 .. count) among the last forward's L new ones (strictly
  // increasing, each < L), moved to consecutive positions from the length before that call;
  // the rest are dropped (§9). A kept key rotated at another position than its new one (RoPE) is
  // rotated by the difference. Throws CacheError, changing nothing, on misuse: no forward since
  // the cache was made, reset, truncated or kept; an encoded cache; indices out of range,
  // repeated or unsorted; positions gone from a window's ring.
  void keep(KvCache& cache, const std::int32_t* indices, int count) const;
  // Cross-attention over an encoder's output (docs/attention-math/decoding.md §9): its keys
  // [batch, S, kdim] and values [batch, S, vdim] projected once (K and V projections with their
  // biases, and the k-norm of a qk-norm module; no RoPE: a rotary module is a ConfigError) into a
  // read-only cache of `dtype` (f32, f16 or i8) holding S positions. forward(args, cache) with
  // it projects only the queries (args.key, args.value unused, args.S = 0) and attends to every
  // position, with no causal rule and args.key_padding_mask [batch, S] applied; it appends nothing.
  std::unique_ptr<KvCache> encode(const float* key, const float* value, int batch, int S,
                                  StorageType dtype = StorageType::f32) const;

  // The part of forward() that belongs to heads [head_begin, head_end): the Q/K/V projections
  // restricted to those heads' columns and attention for those heads only, so that workers can
  // each compute a slice of the heads. args.output is not used. Writes the concatenated head
  // outputs heads_out [B, L, (head_end - head_begin)·d_v] (head h's d_v columns start at
  // (h - head_begin)·d_v). Masks are the ones forward() takes: a per-head attn_mask is the
  // full [B·num_heads, L, S] and head h reads its own slice. When args.weights is set:
  //  - average_weights: [B, L, S] receives Σ_{h in range} P_h / num_heads, the range's share
  //    of forward()'s average, so the shares of a partition of the heads add up to it;
  //  - otherwise [B, head_end - head_begin, L, S], head h at index h - head_begin.
  // Throws ConfigError ("head_begin", "head_end") unless 0 <= head_begin < head_end <= num_heads,
  // and whatever forward() throws for the same arguments.
  void forward_heads(const MhaForwardArgs& args, int head_begin, int head_end,
                     float* heads_out) const;

  // The output projection: out [rows, embed_dim] = heads [rows, h·d_v] · W_Oᵀ + b_O, for rows
  // of concatenated head outputs (rows = B·L for a whole batch, or any subset of rows).
  // Throws ShapeError for rows < 1, StateDictError before the weights are loaded.
  void project_output(const float* heads, int rows, float* out) const;

  // W_i of one head from the loaded weights. Throws ConfigError for a head out of range.
  BilinearForm head_bilinear_form(int head) const;

  // Scratch size forward() needs for these lengths, in floats (projected Q, K, V and heads).
  std::size_t scratch_floats(int batch, int L, int S) const;

 private:
  // Projected Q [B, L, heads·d_k], K [B, S, kv_heads·d_k] and V [B, S, kv_heads·d_v] of a head
  // range, in scratch_.
  struct Projected {
    float *q, *k, *v;
    int heads, q_width, k_width, v_width;
  };
  Projected project_inputs(const MhaForwardArgs& args, int head_begin, int head_end,
                           const kernels::PackedLinear& wq, const kernels::PackedLinear& wk,
                           const kernels::PackedLinear& wv) const;
  // The qk-norm, then RoPE, on the projected Q (L rows per batch) and K (S rows), row i of batch
  // b at position_ids[b·L + i] when given (check_forward() checked them), else first_position + i.
  // Inline, so that a module with neither never calls (so never compiles: V8 compiles a WASM
  // function on its first call) the work, rotate_rows().
  void rotate(const Projected& x, int batch, int L, int S, std::int64_t first_position,
              const std::int32_t* position_ids) const {
    if (config_.qk_norm || config_.rotary_dim > 0) rotate_rows(x, batch, L, S, first_position, position_ids);
  }
  void rotate_rows(const Projected& x, int batch, int L, int S, std::int64_t first_position,
                   const std::int32_t* position_ids) const;
  // The attention problem of `heads` query heads whose projected Q rows are at q (batch stride
  // q_batch, row stride q_width) and whose output rows go to out (batch stride out_batch, row
  // stride heads·d_v): sizes, scale and the GQA group; the caller adds K/V, masks and the rest.
  AttentionProblem head_problem(int batch, int heads, int L, int S, const float* q,
                                std::ptrdiff_t q_batch, int q_width, float* out,
                                std::ptrdiff_t out_batch) const;
  void check_cached_forward(const MhaForwardArgs& args, const KvCache& cache) const;
  void check_call_rows(const MhaForwardArgs& args, const KvCache& cache) const;
  // The call's keys after the append (the longest listed row's length), its batches' rows and
  // first positions in call_rows_ and call_firsts_; false where every batch starts at one position.
  bool place_call(const MhaForwardArgs& args, const KvCache& cache, std::int64_t& after) const;
  void check_keep(const KvCache& cache, const std::int32_t* indices, int count) const;
  // One K/V head's key, rotated (RoPE) at position `from`, rotated on to position `to`.
  void rotate_key(float* key, std::int64_t from, std::int64_t to) const;
  void check_encoded_forward(const MhaForwardArgs& args, const KvCache& cache) const;
  void forward_encoded(const MhaForwardArgs& args, const KvCache& cache) const;  // cross-attention
  struct HeadSlice;  // the Q/K/V weights of a head range, packed (cached by forward_heads)
  void check_forward(const MhaForwardArgs& args) const;
  void check_position_ids(const MhaForwardArgs& args) const;
  void require_loaded() const;  // StateDictError naming the first entry not loaded yet
  void entry_loaded(std::size_t index);  // marks entry `index` loaded (mha_weights.cpp)
  // Where one state-dict entry's values live: projection weights or a bias (rows × cols of
  // `linear`) or a vector, from element `offset` of the entry on. The one mapping of entry names
  // onto the module's storage: load_parameter() fills it, read_parameter() reads it.
  struct EntryPart {
    enum Kind { kWeights, kBias, kVector } kind;
    std::unique_ptr<kernels::PackedLinear> MultiHeadAttention::*linear;  // kWeights, kBias
    std::vector<float> MultiHeadAttention::*values;                      // kVector
    std::size_t offset;
    int rows, cols;
  };
  std::vector<EntryPart> entry_parts(const ParameterSpec& spec) const;
  // The spec of entry `name` with `count` elements (StateDictError for another name or count).
  const ParameterSpec& checked_spec(const std::string& name, std::size_t count) const;
  void attend(const MhaForwardArgs& args, int head_begin, int head_end,
              const kernels::PackedLinear& wq, const kernels::PackedLinear& wk,
              const kernels::PackedLinear& wv, float* heads_out) const;
  const HeadSlice& head_slice(int head_begin, int head_end) const;
  void reset_weight_storage();

  MhaConfig config_;
  std::uint64_t id_ = 0;  // tells this module's caches from another's
  int qk_width_ = 0;  // h·d_k
  int v_width_ = 0;   // h·d_v
  int kv_group_ = 1;  // query heads per K/V head
  int k_width_ = 0;   // h_kv·d_k
  int kv_width_ = 0;  // h_kv·d_v
  std::vector<double> rotary_frequencies_;  // θ_j, j < rotary_dim / 2
  std::vector<float> rotary_cos_, rotary_sin_;  // a given table (set_rotary_table), else empty
  mutable std::vector<float> rotary_table_;  // cos and sin of one position: rotary_dim floats
  std::vector<float> sinks_;  // one logit per query head (config_.sinks), else empty
  std::vector<float> q_norm_, k_norm_;  // the qk-norm weights [head_dim] (config_.qk_norm)
  std::vector<ParameterSpec> specs_;
  std::vector<bool> loaded_;
  // begin_load_in_place()'s entry (its index in specs_) and its parts' new storage, until finish.
  std::size_t pending_entry_ = 0;
  std::vector<std::unique_ptr<kernels::PackedLinear>> pending_;
  // Projection weights packed for the kernels at load time (biases inside).
  std::unique_ptr<kernels::PackedLinear> wq_, wk_, wv_, wo_;
  mutable std::vector<float> scratch_;
  // A cached call's batches at positions of their own (AttentionProblem::rows): each one's cache
  // row, first position, and (RoPE without position_ids) positions [batch, L].
  mutable std::vector<std::int32_t> call_rows_, call_positions_;
  mutable std::vector<std::int64_t> call_firsts_;
  mutable std::vector<std::unique_ptr<HeadSlice>> slices_;  // cleared when weights change
};

}  // namespace webattention
