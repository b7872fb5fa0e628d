#!/usr/bin/python3
"""Trains the char-level GPT (scripts/model/char_gpt.py) on the King James Bible and writes
web/model/model.safetensors (F16) and web/model/train_log.txt.

Run through scripts/model/train.sh (it installs the Debian packages this needs). Deterministic for
a given torch and BLAS: fixed seed, one thread. Afterwards run scripts/model/make_golden.py: the
golden data are computed from the weights as stored.
"""
import argparse
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

import char_gpt
import corpus
import safetensors_io

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

HYPER = {
    "seed": 1234,
    "batch_size": 32,
    "steps": 2000,
    "peak_lr": 3e-3,
    "final_lr_fraction": 0.1,  # cosine decay from peak_lr to this fraction of it
    "warmup_steps": 100,
    "weight_decay": 0.01,      # on matrices only, not on biases / LayerNorm gains
    "betas": (0.9, 0.99),
    "grad_clip": 1.0,
    "eval_interval": 250,
    "eval_batches": 8,         # during training (cheap); the final evaluation uses more
    "final_eval_batches": 64,
    "val_fraction": 0.1,       # the last 10 % of the text
}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=HYPER["steps"])
    ap.add_argument("--out-dir", default=os.path.join(REPO, "web", "model"))
    return ap.parse_args()


def fixed_chunks(data, n_chunks, length):
    """n_chunks evenly spaced windows of length+1 tokens: the same evaluation set every time."""
    stride = (len(data) - length - 1) // n_chunks
    return torch.stack([data[i * stride:i * stride + length + 1] for i in range(n_chunks)])


def random_batch(data, batch_size, length, gen):
    starts = torch.randint(0, len(data) - length - 1, (batch_size,), generator=gen)
    return torch.stack([data[s:s + length + 1] for s in starts.tolist()])


def loss_on(params, chunks):
    logits = char_gpt.forward(params, chunks[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), chunks[:, 1:].reshape(-1))


@torch.no_grad()
def mean_loss(params, chunks, batch_size):
    losses = [loss_on(params, chunks[i:i + batch_size]).item()
              for i in range(0, len(chunks), batch_size)]
    return sum(losses) / len(losses)


def learning_rate(step, total):
    if step < HYPER["warmup_steps"]:
        return HYPER["peak_lr"] * (step + 1) / HYPER["warmup_steps"]
    progress = (step - HYPER["warmup_steps"]) / max(1, total - HYPER["warmup_steps"])
    low = HYPER["final_lr_fraction"]
    return HYPER["peak_lr"] * (low + (1 - low) * 0.5 * (1 + math.cos(math.pi * progress)))


def f16_rounded(params):
    return {k: v.detach().half().float() for k, v in params.items()}


def main():
    args = parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(HYPER["seed"])
    gen = torch.Generator().manual_seed(HYPER["seed"])
    cfg, L, bs = char_gpt.CONFIG, char_gpt.CONFIG["context"], HYPER["batch_size"]

    text = corpus.load_text()
    vocab = corpus.vocabulary(text)
    stoi = {c: i for i, c in enumerate(vocab)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    split = int(len(data) * (1 - HYPER["val_fraction"]))
    train_data, val_data = data[:split], data[split:]

    params = char_gpt.init_params(len(vocab), gen)
    for p in params.values():
        p.requires_grad_(True)
    n_params = sum(p.numel() for p in params.values())
    matrices = [p for p in params.values() if p.dim() == 2]
    vectors = [p for p in params.values() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": matrices, "weight_decay": HYPER["weight_decay"]},
                             {"params": vectors, "weight_decay": 0.0}],
                            lr=HYPER["peak_lr"], betas=HYPER["betas"])
    val_eval = fixed_chunks(val_data, HYPER["eval_batches"] * bs, L)

    os.makedirs(args.out_dir, exist_ok=True)
    log_lines = []

    def log(line):
        print(line, flush=True)
        log_lines.append(line)

    log(f"char-gpt training: torch {torch.__version__}, threads {torch.get_num_threads()}")
    log(f"text: bible-kjv, {len(text)} chars, sha256 {corpus.text_sha256(text)}; "
        f"train {len(train_data)} / val {len(val_data)} chars (last {HYPER['val_fraction']:.0%})")
    log(f"vocab: {len(vocab)} chars; parameters: {n_params}")
    log(f"config: {cfg}")
    log(f"hyper: {dict(HYPER, steps=args.steps)}")
    log("step  lr        train_loss(mean since last)  val_loss  elapsed_s")

    t0, running, count = time.time(), 0.0, 0
    for step in range(args.steps):
        for group in opt.param_groups:
            group["lr"] = learning_rate(step, args.steps)
        loss = loss_on(params, random_batch(train_data, bs, L, gen))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), HYPER["grad_clip"])
        opt.step()
        running, count = running + loss.item(), count + 1
        last = step == args.steps - 1
        if (step + 1) % HYPER["eval_interval"] == 0 or last or step == 0:
            val = mean_loss(params, val_eval, bs)
            log(f"{step + 1:5d} {learning_rate(step, args.steps):.2e} {running / count:10.4f}"
                f" {val:26.4f} {time.time() - t0:10.1f}")
            running, count = 0.0, 0
    train_seconds = time.time() - t0

    n_final = HYPER["final_eval_batches"] * bs
    final = {}
    for label, p in (("f32", params), ("f16-rounded", f16_rounded(params))):
        final[label] = (mean_loss(p, fixed_chunks(train_data, n_final, L), bs),
                        mean_loss(p, fixed_chunks(val_data, n_final, L), bs))
    log(f"training time: {train_seconds:.1f} s for {args.steps} steps "
        f"({train_seconds / args.steps:.3f} s/step, one thread)")
    for label, (tr, va) in final.items():
        log(f"final loss ({label} weights, {n_final} chunks of {L} chars each): "
            f"train {tr:.4f}  val {va:.4f} nats/char")

    weights_path = os.path.join(args.out_dir, "model.safetensors")
    safetensors_io.write(weights_path, params, char_gpt.metadata(vocab), dtype="F16")
    log(f"wrote model.safetensors: {os.path.getsize(weights_path)} bytes (F16)")
    with open(os.path.join(args.out_dir, "train_log.txt"), "w") as f:
        f.write("\n".join(log_lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
