#!/usr/bin/python3
"""Writes web/model/golden.json: the truth a runner of web/model/model.safetensors must reproduce.

Everything is computed in float64 from the weights AS STORED (F16 read back and widened exactly),
by the full-sequence forward of char_gpt.py: every step recomputes all positions 0..T-1 with the
sliding-window causal mask at absolute positions. No KV cache is involved, so this is an
independent truth for a cache (generation runs past the 128-char window).

Also checks that float32 picks the same greedy continuation and that every greedy step has a
comfortable top-1 vs top-2 logit margin, so that "exact greedy equality on every backend" is not
fragile; the script stops if either fails.
"""
import argparse
import hashlib
import json
import os
import sys

import torch

import char_gpt
import naive_check
import safetensors_io

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROMPT = "And God said, "
CONTINUATION = 200
# Positions (of the last token fed) whose logits are kept for generated steps: 127 is the last
# position that sees every earlier key; from 128 on the window drops the oldest keys.
STEP_POSITIONS = (127, 128, 129, 170, len(PROMPT) + CONTINUATION - 2)
MIN_MARGIN = 1e-3  # below this, float32 rounding differences could flip a greedy choice


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model-dir", default=os.path.join(REPO, "web", "model"))
    return ap.parse_args()


def greedy(params, ids, n):
    """n greedy steps with full recomputation. Returns (new ids, per-step (margin, logits))."""
    ids, steps = list(ids), []
    with torch.no_grad():
        for _ in range(n):
            logits = char_gpt.forward(params, torch.tensor([ids]))[0, -1]
            top2 = torch.topk(logits, 2).values
            steps.append(((top2[0] - top2[1]).item(), logits))
            ids.append(int(torch.argmax(logits)))
    return ids, steps


def main():
    args = parse_args()
    torch.set_num_threads(1)
    weights_path = os.path.join(args.model_dir, "model.safetensors")
    params64, meta = safetensors_io.read(weights_path)
    vocab = meta["vocab"]
    if meta != char_gpt.metadata(vocab):
        raise SystemExit(f"metadata of {weights_path} does not match char_gpt.CONFIG: {meta}")
    with open(weights_path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    err = naive_check.check_attention(params64, char_gpt.CONFIG["window"] + 12)
    print(f"batched attention vs naive formulas (past the window): max abs {err:.1e}")
    stoi = {c: i for i, c in enumerate(vocab)}
    prompt_ids = [stoi[c] for c in PROMPT]

    with torch.no_grad():
        prompt_logits = char_gpt.forward(params64, torch.tensor([prompt_ids]))[0]
    ids64, steps64 = greedy(params64, prompt_ids, CONTINUATION)
    params32 = {k: v.float() for k, v in params64.items()}
    ids32, steps32 = greedy(params32, prompt_ids, CONTINUATION)
    text64 = "".join(vocab[i] for i in ids64[len(prompt_ids):])
    text32 = "".join(vocab[i] for i in ids32[len(prompt_ids):])

    margins = [m for m, _ in steps64]
    worst = min(range(CONTINUATION), key=lambda s: margins[s])
    f32_err = max((a - b.double()).abs().max().item() for (_, a), (_, b) in zip(steps64, steps32))
    # How much the window changes the logits at the last position (a runner without the window
    # must fail the step-logit checks): the same sequence through a plain causal mask.
    no_window = dict(char_gpt.CONFIG, window=10 ** 9)
    with torch.no_grad():
        plain = char_gpt.forward(params64, torch.tensor([ids64[:-1]]), no_window)[0, -1]
    window_effect = (plain - steps64[-1][1]).abs().max().item()

    print(f"prompt {PROMPT!r} -> {text64!r}")
    print(f"float32 greedy agrees: {text32 == text64}; max |logit f32 - f64| {f32_err:.3e}")
    print(f"smallest greedy margin (float64): {margins[worst]:.6f} at step {worst}")
    print(f"window effect on the last step's logits: max abs {window_effect:.4f}")
    if text32 != text64:
        raise SystemExit("float32 and float64 greedy continuations differ")
    if margins[worst] < MIN_MARGIN:
        raise SystemExit(f"greedy margin {margins[worst]} < {MIN_MARGIN}: choose another prompt")

    def step_record(position):
        s = position - len(prompt_ids) + 1  # step s is predicted from position len(prompt)+s-1
        return {"step": s, "position": position, "next": vocab[ids64[len(prompt_ids) + s]],
                "logits": steps64[s][1].tolist()}

    golden = {
        "generator": "scripts/model/make_golden.py",
        "torch": torch.__version__,
        "weights": "model.safetensors",
        "weightsSha256": sha,
        "dtype": "float64 logits from the stored F16 weights widened exactly; full-sequence "
                 "forward with the sliding-window causal mask, recomputed at every step",
        "vocab": vocab,
        "prompt": PROMPT,
        "promptIds": prompt_ids,
        "promptLogits": prompt_logits.tolist(),
        "continuationLength": CONTINUATION,
        "greedyContinuation": text64,
        "greedyIds": ids64[len(prompt_ids):],
        "minGreedyMargin": margins[worst],
        "minGreedyMarginStep": worst,
        "float32GreedyAgrees": True,
        "stepLogits": [step_record(p) for p in STEP_POSITIONS],
    }
    out = os.path.join(args.model_dir, "golden.json")
    with open(out, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    print(f"wrote {out}: {os.path.getsize(out)} bytes")


if __name__ == "__main__":
    sys.exit(main())
