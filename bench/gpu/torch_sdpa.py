# PyTorch's F.scaled_dot_product_attention on CUDA, float32 (TF32 off), for bench/gpu/gpu_sdpa.mjs's
# shapes [N, L, d] (self-attention, q = k = v), causal and not: host to device to host (what a JS
# call with host tensors pays) and on the device. One JSON line per row.
#   python3 bench/gpu/torch_sdpa.py ['[[12, 1024, 64], ...]']
import json
import sys

import torch
import torch.nn.functional as F

from torch_timing import median_ms

shapes = json.loads(sys.argv[1]) if len(sys.argv) > 1 else [[12, 1024, 64], [12, 2048, 64], [12, 4096, 64], [16, 8192, 64]]
print(torch.__version__, torch.cuda.get_device_name(), flush=True)


with torch.no_grad():
    for N, L, d in shapes:
        host = torch.randn(N, L, d)
        x = host.cuda()
        for causal in (False, True):
            gflop = 4 * N * L * L * d / (2 if causal else 1) / 1e9
            row = dict(N=N, L=L, d=d, causal=causal)
            row['torch_f32_e2e_ms'] = round(median_ms(lambda: F.scaled_dot_product_attention(*(host.cuda(),) * 3, is_causal=causal).cpu())[0], 3)
            row['torch_f32_dev_ms'] = round(median_ms(lambda: F.scaled_dot_product_attention(x, x, x, is_causal=causal))[0], 3)
            row['torch_f32_dev_gflops'] = round(gflop / row['torch_f32_dev_ms'] * 1e3, 1)
            print(json.dumps(row), flush=True)
