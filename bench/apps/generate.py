"""One generation or embedding workload on the current CUDA device, as one
JSON line in step_time.py's shape, so that run.sh and report.py serve both:
`step_ms` is the time of one generated token (or one encoder batch),
`first_step_ms` the time to the first token (the prompt's prefill), and
`output_sha` a digest of the tokens (or embeddings) for comparing runs.
Models have random weights from a fixed seed and a config, so nothing is
downloaded. Usage: generate.py NAME (one of the keys of CASES, or
bert-varlen), or generate.py --list."""
import argparse
import ctypes
import hashlib
import json
import statistics
import time

import torch

from step_time import scuda_function

NEW_TOKENS = 64


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(attn_implementation="sdpa")
    return GPT2LMHeadModel(config).half()


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                         num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
                         max_position_embeddings=4096, attn_implementation="sdpa")
    return LlamaForCausalLM(config).to(torch.bfloat16)


# name: (model, batch, prompt tokens, compiled with CUDA graphs); every
# model and batch runs eager and compiled ("-graphs").
CASES = {f"{m}-b{b}{suffix}": (m, b, 32, graphs) for m in ("gpt2", "llama") for b in (1, 8, 32)
         for suffix, graphs in (("", False), ("-graphs", True))}
CASES.update({"gpt2-p1k": ("gpt2", 1, 960, False), "llama-p2k": ("llama", 1, 2048, False)})
BUILDERS = {"gpt2": gpt2, "llama": llama}
# The group run.sh runs for "generation": every batch eager and compiled, the
# long prompt, the embedding service. gpt2-p1k asks llama-p2k's question again.
GENERATION = [name for name in CASES if name != "gpt2-p1k"] + ["bert-varlen"]


def timed(fn):
    torch.cuda.synchronize()
    start = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3, out


def generation(name, repeats, replies):
    kind, batch, prompt, graphs = CASES[name]
    model = BUILDERS[kind]().cuda().eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    ids = torch.randint(1, model.config.vocab_size, (batch, prompt)).cuda()
    extra = {}
    if graphs:
        # A static cache makes generate compile the forward pass in
        # reduce-overhead mode, which replays it as CUDA graphs.
        extra["cache_implementation"] = "static"

    def generate(n):
        with torch.no_grad():
            return model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                  max_new_tokens=n, min_new_tokens=n, **extra)

    first, _ = timed(lambda: generate(1))
    for _ in range(2 if graphs else 1):
        generate(NEW_TOKENS)
    prefills, per_token, out, waits = [], [], None, []
    for _ in range(repeats):
        r0 = replies() if replies else 0
        prefills.append(timed(lambda: generate(1))[0])
        r1 = replies() if replies else 0
        total, out = timed(lambda: generate(NEW_TOKENS))
        r2 = replies() if replies else 0
        per_token.append((total - prefills[-1]) / (NEW_TOKENS - 1))
        waits.append(((r2 - r1) - (r1 - r0)) / (NEW_TOKENS - 1))
    counted = {"replies_per_token": round(statistics.median(waits), 2)} if replies else {}
    return counted | {"first_call_ms": round(first, 3), "first_step_ms": round(statistics.median(prefills), 3),
            "step_ms": round(statistics.median(per_token), 3),
            "output_sha": hashlib.sha256(out.cpu().numpy().tobytes()).hexdigest()[:16]}


def embedding(repeats):
    """BERT-base-sized encoder, batches of 32 texts whose padded length changes
    every batch: step_ms is one batch, texts_per_s follows from it."""
    from transformers import BertConfig, BertModel
    model = BertModel(BertConfig(attn_implementation="sdpa")).half().cuda().eval()
    lengths = torch.randint(16, 256, (40,), generator=torch.Generator().manual_seed(1)).tolist()
    batches = [torch.randint(1000, 30000, (32, n)) for n in lengths]
    digest = hashlib.sha256()

    def run_all(keep):
        with torch.no_grad():
            for b in batches:
                ids = b.cuda()
                out = model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
                pooled = out.float().mean(dim=1).cpu()
                if keep:
                    digest.update(pooled.numpy().tobytes())

    first, _ = timed(lambda: run_all(False))
    times = [timed(lambda: run_all(i == 0))[0] / len(batches) for i in range(repeats)]
    step = statistics.median(times)
    return {"first_call_ms": round(first, 3), "first_step_ms": round(first / len(batches), 3),
            "step_ms": round(step, 3), "texts_per_s": round(32e3 / step, 1),
            "output_sha": digest.hexdigest()[:16]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("name", nargs="?", choices=sorted(CASES) + ["bert-varlen"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--list", action="store_true",
                        help="print the names of run.sh's group 'generation', and exit")
    args = parser.parse_args()
    if args.list:
        print(" ".join(GENERATION))
        return
    if args.name is None:
        parser.error("name a workload (or --list)")
    torch.manual_seed(0)
    replies = scuda_function("scuda_replies_awaited", ctypes.c_uint64)
    before = replies() if replies else None
    if args.name == "bert-varlen":
        result = embedding(args.repeats)
    else:
        result = generation(args.name, args.repeats, replies)
    result.update({"model": args.name, "device": torch.cuda.get_device_name()})
    if replies:
        result["replies"] = replies() - before
    print(json.dumps(result))


if __name__ == "__main__":
    main()
