# What the PyTorch benches beside the WebGPU ones share (torch_mha.py, torch_sdpa.py): float32 with
# TF32 off (importing this sets it), and median_ms().
import time

import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def median_ms(fn, least=30, budget_s=0.0):
    """fn()'s median ms after 3 warm-up runs, timed at least `least` times and for budget_s seconds; and the count."""
    for _ in range(3):
        fn()
    sync()
    times = []
    end = time.perf_counter() + budget_s
    while len(times) < least or time.perf_counter() < end:
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2] * 1e3, len(times)
