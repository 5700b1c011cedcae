#!/usr/bin/env python3
"""PyTorch's all-MiniLM-L6-v2 forward (transformers' BertModel, mean pooling, L2 normalization:
what sentence-transformers runs), eager and torch.compile, timed at the batches and sequence
length `minilm --bench` uses, so kiln's sentences per second sit beside a peer's measured in the
same run. Weights come from a model directory's config.json and model.safetensors.

  python3 bench/minilm_peers.py --model DIR [--device cpu|cuda] [--seq 128] [--batches 1,32]
                                [--json FILE]
"""
import argparse
import json
import pathlib
import statistics
import time


def load_model(torch, model_dir, device):
    from safetensors.torch import load_file
    from transformers import BertConfig, BertModel

    config = BertConfig.from_json_file(str(model_dir / "config.json"))
    model = BertModel(config, add_pooling_layer=False)
    state = load_file(str(model_dir / "model.safetensors"))
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing:
        raise SystemExit(f"weights missing from model.safetensors: {missing}")
    return model.to(device).eval()


def embed(torch, model, ids, mask):
    hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, p=2, dim=1)


def median_seconds(torch, fn, device, runs):
    for _ in range(3):
        fn()
    times = []
    for _ in range(runs):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, type=pathlib.Path)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batches", default="1,32")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()

    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = load_model(torch, args.model, args.device)
    compiled = None if args.no_compile else torch.compile(model)
    rows = []
    with torch.inference_mode():
        for batch in [int(b) for b in args.batches.split(",")]:
            generator = torch.Generator().manual_seed(batch)
            ids = torch.randint(1000, 30000, (batch, args.seq), generator=generator)
            ids = ids.to(args.device)
            mask = torch.ones_like(ids)
            for peer, m in (("torch eager", model), ("torch.compile", compiled)):
                if m is None:
                    continue
                if args.device == "cuda":
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                seconds = median_seconds(torch, lambda: embed(torch, m, ids, mask), args.device,
                                         args.runs)
                row = {"peer": peer, "device": args.device, "batch": batch, "seq": args.seq,
                       "ms": seconds * 1e3, "sentences_per_s": batch / seconds}
                peak = ""
                if args.device == "cuda":
                    # What the forward holds at its peak, weights and inputs included.
                    row["max_memory_allocated"] = torch.cuda.max_memory_allocated()
                    peak = f"  peak {row['max_memory_allocated'] / 2**20:8.1f} MiB"
                rows.append(row)
                print(f"{peer:14s} {args.device} batch {batch:3d} seq {args.seq}: "
                      f"{seconds * 1e3:9.3f} ms  {batch / seconds:10.1f} sentences/s{peak}",
                      flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"torch": torch.__version__,
                                                       "threads": torch.get_num_threads(),
                                                       "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
