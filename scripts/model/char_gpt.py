"""The char-level GPT: its configuration, its parameters (named as web/model/README.md lists them)
and ONE functional forward pass used for both training (float32) and the golden data (float64).

Attention is written out explicitly because torch 1.13's nn.MultiheadAttention has no grouped-query
attention, no rotary embedding and no sliding window. The formulas are those of issue 10's contract
(docs in web/model/README.md): RoPE half-split (GPT-NeoX) at absolute positions, query head i uses
K/V head i // (n_head / n_kv_head), and the query at position p sees keys p - window + 1 .. p.
"""
import math

import torch
import torch.nn.functional as F

CONFIG = {
    "context": 128,        # training chunk length
    "window": 128,         # sliding attention window (= context: training never meets it)
    "n_layer": 2,
    "d_model": 128,
    "n_head": 4,
    "n_kv_head": 2,
    "head_dim": 32,
    "d_mlp": 512,
    "rope_base": 10000.0,
    "rotary_dim": 32,      # = head_dim: every dimension of a head is rotated
    "ln_eps": 1e-5,
}


def param_shapes(vocab_size, cfg=CONFIG):
    """Name -> shape of every parameter, in the order they are stored."""
    d, hd = cfg["d_model"], cfg["head_dim"]
    dq, dkv = cfg["n_head"] * hd, cfg["n_kv_head"] * hd
    shapes = {"tok_emb.weight": (vocab_size, d)}
    for i in range(cfg["n_layer"]):
        p = f"layers.{i}."
        shapes.update({
            p + "ln1.weight": (d,), p + "ln1.bias": (d,),
            p + "attn.q_proj_weight": (dq, d),
            p + "attn.k_proj_weight": (dkv, d),
            p + "attn.v_proj_weight": (dkv, d),
            p + "attn.in_proj_bias": (dq + 2 * dkv,),
            p + "attn.out_proj.weight": (d, dq),
            p + "attn.out_proj.bias": (d,),
            p + "ln2.weight": (d,), p + "ln2.bias": (d,),
            p + "mlp.fc1.weight": (cfg["d_mlp"], d), p + "mlp.fc1.bias": (cfg["d_mlp"],),
            p + "mlp.fc2.weight": (d, cfg["d_mlp"]), p + "mlp.fc2.bias": (d,),
        })
    shapes.update({"ln_f.weight": (d,), "ln_f.bias": (d,),
                   "head.weight": (vocab_size, d), "head.bias": (vocab_size,)})
    return shapes


def init_params(vocab_size, generator, cfg=CONFIG):
    """GPT-2-style initialisation: N(0, 0.02) matrices, residual projections scaled by
    1/sqrt(2 * n_layer), zero biases, unit LayerNorm gains."""
    params = {}
    resid_std = 0.02 / math.sqrt(2 * cfg["n_layer"])
    for name, shape in param_shapes(vocab_size, cfg).items():
        if name.endswith(("ln1.weight", "ln2.weight", "ln_f.weight")):
            t = torch.ones(shape)
        elif len(shape) == 1:
            t = torch.zeros(shape)
        else:
            std = resid_std if name.endswith(("out_proj.weight", "fc2.weight")) else 0.02
            t = torch.randn(shape, generator=generator) * std
        params[name] = t
    return params


def rope_cos_sin(positions, cfg, dtype):
    """cos/sin [T, rotary_dim/2] of p * theta_j, theta_j = base^(-2j/dim), computed in float64."""
    dim = cfg["rotary_dim"]
    j = torch.arange(dim // 2, dtype=torch.float64)
    theta = torch.pow(torch.tensor(cfg["rope_base"], dtype=torch.float64), -2.0 * j / dim)
    angle = positions.to(torch.float64)[:, None] * theta[None, :]
    return torch.cos(angle).to(dtype), torch.sin(angle).to(dtype)


def apply_rope(x, cos, sin, cfg):
    """x [B, heads, T, head_dim]; half-split pairs (x_j, x_{j+dim/2}) rotated by p * theta_j."""
    half = cfg["rotary_dim"] // 2
    x1, x2 = x[..., :half], x[..., half:2 * half]
    rotated = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    return torch.cat([rotated, x[..., 2 * half:]], dim=-1)


def window_mask(positions, cfg, dtype):
    """Additive [T, T] mask: query at p sees key at j iff 0 <= p - j < window."""
    dist = positions[:, None] - positions[None, :]
    allowed = (dist >= 0) & (dist < cfg["window"])
    return torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, float("-inf"))


def attention(params, prefix, x, positions, cfg, need_weights=False):
    """GQA + RoPE + sliding-window causal self-attention. x [B, T, d]."""
    B, T, _ = x.shape
    h, hkv, hd = cfg["n_head"], cfg["n_kv_head"], cfg["head_dim"]
    bias = params[prefix + "in_proj_bias"]
    bq, bk, bv = bias[:h * hd], bias[h * hd:(h + hkv) * hd], bias[(h + hkv) * hd:]
    q = F.linear(x, params[prefix + "q_proj_weight"], bq).view(B, T, h, hd).transpose(1, 2)
    k = F.linear(x, params[prefix + "k_proj_weight"], bk).view(B, T, hkv, hd).transpose(1, 2)
    v = F.linear(x, params[prefix + "v_proj_weight"], bv).view(B, T, hkv, hd).transpose(1, 2)
    cos, sin = rope_cos_sin(positions, cfg, x.dtype)
    q, k = apply_rope(q, cos, sin, cfg), apply_rope(k, cos, sin, cfg)
    k = k.repeat_interleave(h // hkv, dim=1)  # query head i uses K/V head i // (h / hkv)
    v = v.repeat_interleave(h // hkv, dim=1)
    scores = q @ k.transpose(-1, -2) / math.sqrt(hd) + window_mask(positions, cfg, x.dtype)
    weights = torch.softmax(scores, dim=-1)
    o = (weights @ v).transpose(1, 2).reshape(B, T, h * hd)
    out = F.linear(o, params[prefix + "out_proj.weight"], params[prefix + "out_proj.bias"])
    return out, (weights if need_weights else None)


def forward(params, idx, cfg=CONFIG, need_weights=False):
    """Logits [B, T, V] for token ids idx [B, T] at absolute positions 0..T-1, in the dtype of
    params. With need_weights, also the attention weights [B, h, T, T] of each layer."""
    T = idx.shape[1]
    positions = torch.arange(T)
    d, eps = cfg["d_model"], cfg["ln_eps"]
    x = F.embedding(idx, params["tok_emb.weight"])
    all_weights = []
    for i in range(cfg["n_layer"]):
        p = f"layers.{i}."
        h = F.layer_norm(x, (d,), params[p + "ln1.weight"], params[p + "ln1.bias"], eps)
        a, w = attention(params, p + "attn.", h, positions, cfg, need_weights)
        x = x + a
        all_weights.append(w)
        h = F.layer_norm(x, (d,), params[p + "ln2.weight"], params[p + "ln2.bias"], eps)
        h = F.gelu(F.linear(h, params[p + "mlp.fc1.weight"], params[p + "mlp.fc1.bias"]))
        x = x + F.linear(h, params[p + "mlp.fc2.weight"], params[p + "mlp.fc2.bias"])
    x = F.layer_norm(x, (d,), params["ln_f.weight"], params["ln_f.bias"], eps)
    logits = F.linear(x, params["head.weight"], params["head.bias"])
    return (logits, all_weights) if need_weights else logits


def metadata(vocab, cfg=CONFIG):
    """The safetensors __metadata__ (string -> string): what a runner needs besides the tensors."""
    return {
        "format": "char-gpt",
        "vocab": vocab,
        "context": str(cfg["context"]),
        "window": str(cfg["window"]),
        "n_layer": str(cfg["n_layer"]),
        "d_model": str(cfg["d_model"]),
        "n_head": str(cfg["n_head"]),
        "n_kv_head": str(cfg["n_kv_head"]),
        "head_dim": str(cfg["head_dim"]),
        "d_mlp": str(cfg["d_mlp"]),
        "rope_base": str(int(cfg["rope_base"])),
        "rotary_dim": str(cfg["rotary_dim"]),
        "rotary_interleaved": "false",
        "ln_eps": repr(cfg["ln_eps"]),
        "activation": "gelu_erf",
        "head": "untied, with bias",
    }
