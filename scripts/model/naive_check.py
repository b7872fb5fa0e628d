"""A second, deliberately naive reading of the attention formulas in web/model/README.md (one
position, one head, one rotation pair at a time), against which make_golden.py checks
char_gpt.attention before trusting it: the golden data then follow the documented formulas and not
only the batched code.
"""
import math

import torch

import char_gpt


def rotate(vec, p, cfg):
    """RoPE half-split on one head vector at absolute position p (README formula)."""
    out, half = vec.clone(), cfg["rotary_dim"] // 2
    for j in range(half):
        angle = p * cfg["rope_base"] ** (-2.0 * j / cfg["rotary_dim"])
        a, b = vec[j].item(), vec[j + half].item()
        out[j] = a * math.cos(angle) - b * math.sin(angle)
        out[j + half] = b * math.cos(angle) + a * math.sin(angle)
    return out


def naive_attention(params, prefix, x, cfg):
    """x [T, d] float64 -> [T, d], position by position and head by head."""
    T = x.shape[0]
    h, hkv, hd, W = cfg["n_head"], cfg["n_kv_head"], cfg["head_dim"], cfg["window"]
    bias = params[prefix + "in_proj_bias"]
    q = x @ params[prefix + "q_proj_weight"].T + bias[:h * hd]
    k = x @ params[prefix + "k_proj_weight"].T + bias[h * hd:(h + hkv) * hd]
    v = x @ params[prefix + "v_proj_weight"].T + bias[(h + hkv) * hd:]
    keys = [[rotate(k[p, g * hd:(g + 1) * hd], p, cfg) for g in range(hkv)] for p in range(T)]
    heads_out = torch.zeros(T, h * hd, dtype=x.dtype)
    for p in range(T):
        for i in range(h):
            g = i // (h // hkv)
            qi = rotate(q[p, i * hd:(i + 1) * hd], p, cfg)
            visible = range(max(0, p - W + 1), p + 1)
            scores = torch.tensor([float(qi @ keys[j][g]) / math.sqrt(hd) for j in visible],
                                  dtype=x.dtype)
            w = torch.softmax(scores, dim=0)
            heads_out[p, i * hd:(i + 1) * hd] = sum(
                w[n] * v[j, g * hd:(g + 1) * hd] for n, j in enumerate(visible))
    return heads_out @ params[prefix + "out_proj.weight"].T + params[prefix + "out_proj.bias"]


def check_attention(params, length, cfg=char_gpt.CONFIG, seed=0, tol=1e-10):
    """Compares char_gpt.attention with naive_attention on random float64 inputs of `length`
    positions (use > window so that the window is exercised). Raises on disagreement."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(length, cfg["d_model"], generator=gen, dtype=torch.float64)
    fast, _ = char_gpt.attention(params, "layers.0.attn.", x[None], torch.arange(length), cfg)
    naive = naive_attention(params, "layers.0.attn.", x, cfg)
    err = (fast[0] - naive).abs().max().item()
    if not err < tol:
        raise SystemExit(f"char_gpt.attention disagrees with the naive formulas: {err:.3e}")
    return err
