# PyTorch beside the WebGPU benches on the same card (issue 39's targets): float32 with TF32 off.
#   forward: nn.MultiheadAttention(E, h, batch_first=True), self-attention at bench/gpu/gpu.mjs's
#     shapes (L, E, h), batch 1, without a mask and causal (a boolean [L, L] mask): host to device
#     to host (what a JS call with host arrays pays: the input copied up, the forward, the output
#     copied down) and on the device alone; median ms.
#   stack: bench/gpu/gpu_decode_stack.mjs's decode step in eager PyTorch: 24 layers at E 2048, 32
#     query heads over 8 KV heads (d 64), each layer's K/V cache holding 511 positions, the step's
#     token appended at 511 (512 keys): per layer the Q/K/V projections, the append, softmax(q kᵀ
#     / 8) v per head (each KV head serving 4 query heads), the output projection. Median ms per
#     token on the device, and with the last output read to the host (what sampling needs).
# One JSON line per row.
#   python3 bench/gpu/torch_mha.py [--quick] [--device cuda|cpu] [--shapes '[[1024, 768, 12], ...]'] [--layers N]
# --quick: small shapes and a 2-layer stack of E 128 (a check that it runs, e.g. --device cpu).
import argparse
import json

import torch
import torch.nn.functional as F

from torch_timing import median_ms

parser = argparse.ArgumentParser()
parser.add_argument('--quick', action='store_true')
parser.add_argument('--device', default='cuda')
parser.add_argument('--shapes')
parser.add_argument('--layers', type=int)
args = parser.parse_args()
device = torch.device(args.device)
cuda = device.type == 'cuda'
default_shapes = [[64, 64, 2], [128, 128, 2]] if args.quick else [[128, 512, 8], [1024, 768, 12], [2048, 768, 12], [4096, 1024, 16], [16384, 768, 12]]
shapes = json.loads(args.shapes) if args.shapes else default_shapes
stack = dict(layers=2, E=128, h=2, hkv=1, cached=63) if args.quick else dict(layers=24, E=2048, h=32, hkv=8, cached=511)
if args.layers:
    stack['layers'] = args.layers


def timed(fn):
    """fn()'s median ms (3 decimals) over at least 2 s and 5 runs, and the count."""
    ms, runs = median_ms(fn, least=5, budget_s=2.0)
    return round(ms, 3), runs


def forward_rows():
    for L, E, h in shapes:
        mha = torch.nn.MultiheadAttention(E, h, batch_first=True).to(device).eval()
        host = torch.randn(1, L, E)
        x = host.to(device)
        for causal in (False, True):
            mask = torch.ones(L, L, dtype=torch.bool, device=device).triu(1) if causal else None
            on_device, runs = timed(lambda: mha(x, x, x, attn_mask=mask, need_weights=False))
            def host_to_host():
                up = host.to(device)
                return mha(up, up, up, attn_mask=mask, need_weights=False)[0].cpu()
            e2e, _ = timed(host_to_host)
            gflop = (8 * L * E * E + 4 * L * L * E / (2 if causal else 1)) / 1e9
            print(json.dumps(dict(kind='forward', L=L, E=E, h=h, causal=causal, torch_f32_dev_ms=on_device, torch_f32_e2e_ms=e2e,
                                  dev_gflops=round(gflop / on_device * 1e3, 1), runs=runs)), flush=True)


class Layer:
    """One attention layer of the stack: weights as gpu_decode_stack's layers hold them, its own cache."""

    def __init__(self, E, h, hkv, cached):
        d = E // h
        self.h, self.hkv, self.d, self.at = h, hkv, d, cached
        scale = E ** -0.5
        self.wq, self.wk, self.wv = (torch.randn(n * d, E, device=device) * scale for n in (h, hkv, hkv))
        self.wo = torch.randn(E, h * d, device=device) * scale
        self.bq, self.bk, self.bv = (torch.zeros(n * d, device=device) for n in (h, hkv, hkv))
        self.bo = torch.zeros(E, device=device)
        self.k = torch.randn(hkv, cached + 1, d, device=device)
        self.v = torch.randn(hkv, cached + 1, d, device=device)

    def step(self, x):
        """x [1, E] at position self.at (the cache's last slot, written again each step)."""
        q = F.linear(x, self.wq, self.bq).view(self.hkv, self.h // self.hkv, self.d)
        self.k[:, self.at] = F.linear(x, self.wk, self.bk).view(self.hkv, self.d)
        self.v[:, self.at] = F.linear(x, self.wv, self.bv).view(self.hkv, self.d)
        p = torch.softmax(q @ self.k.transpose(1, 2) / self.d ** 0.5, dim=-1)  # [hkv, group, keys]
        return F.linear((p @ self.v).reshape(1, -1), self.wo, self.bo)


def stack_rows():
    layers = [Layer(stack['E'], stack['h'], stack['hkv'], stack['cached']) for _ in range(stack['layers'])]
    x = torch.randn(1, stack['E'], device=device)

    def through():
        t = x
        for layer in layers:
            t = layer.step(t)
        return t
    on_device, runs = timed(through)
    read, _ = timed(lambda: through().cpu())
    print(json.dumps(dict(kind='stack', **stack, keys=stack['cached'] + 1, torch_f32_dev_ms=on_device, torch_f32_read_ms=read, runs=runs)), flush=True)


with torch.no_grad():
    print(json.dumps(dict(kind='device', torch=torch.__version__, device=torch.cuda.get_device_name() if cuda else 'cpu', tf32=False)), flush=True)
    forward_rows()
    stack_rows()
