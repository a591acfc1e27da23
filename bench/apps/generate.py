"""One generation or embedding workload on the current CUDA device, as one
JSON line in step_time.py's shape, so that run.sh and report.py serve both:
`step_ms` is the time of one generated token (or one encoder batch),
`first_step_ms` the time to the first token (the prompt's prefill), and
`output_sha` a digest of the tokens (or embeddings) for comparing runs.
Models have random weights from a fixed seed and a config, so nothing is
downloaded. Usage: generate.py NAME (one of the keys of CASES, or
bert-varlen), or generate.py --list; generate.py NAME --serve measures
rounds on demand for alternate.py, and "load NAME" on its stdin moves it to
another workload in the same process (the models are built once per kind)."""
import argparse
import ctypes
import hashlib
import json
import statistics
import sys
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


class Captures:
    """Counts CUDA graph captures (torch.cuda.CUDAGraph.capture_begin, which
    CUDA graph trees call for each graph they record), so that a round that
    recorded graphs again shows as one, natively as through scuda."""

    def __init__(self):
        self.count = 0
        begin = torch.cuda.CUDAGraph.capture_begin

        def counted(graph, *args, **kwargs):
            self.count += 1
            return begin(graph, *args, **kwargs)

        torch.cuda.CUDAGraph.capture_begin = counted


CAPTURES = Captures()


def timed(fn):
    torch.cuda.synchronize()
    start = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3, out


MODELS = {}


def model_of(kind):
    """The model of a kind, built from seed 0 the first time it is asked for."""
    if kind not in MODELS:
        torch.manual_seed(0)
        model = BUILDERS[kind]().cuda().eval()
        model.generation_config.eos_token_id = None
        model.generation_config.pad_token_id = 0
        MODELS[kind] = model
    return MODELS[kind]


def generation(name, replies):
    """Builds (or reuses) and warms the model; returns the first call's time,
    a function that measures one round (a 1-token call, the prefill, and a
    64-token call) and generate(n), a call of n tokens."""
    kind, batch, prompt, graphs = CASES[name]
    model = model_of(kind)
    torch.manual_seed(1)
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

    def one_round():
        r0 = replies() if replies else 0
        c0 = CAPTURES.count
        prefill, _ = timed(lambda: generate(1))
        r1 = replies() if replies else 0
        total, out = timed(lambda: generate(NEW_TOKENS))
        r2 = replies() if replies else 0
        result = {"first_step_ms": prefill, "step_ms": (total - prefill) / (NEW_TOKENS - 1),
                  "output_sha": hashlib.sha256(out.cpu().numpy().tobytes()).hexdigest()[:16],
                  "captures": CAPTURES.count - c0}
        if replies:
            result["replies_per_token"] = ((r2 - r1) - (r1 - r0)) / (NEW_TOKENS - 1)
        return result

    return first, one_round, generate


def embedding(replies):
    """BERT-base-sized encoder, batches of 32 texts whose padded length changes
    every batch: a round embeds every batch once, step_ms is one batch and
    texts_per_s follows from it."""
    from transformers import BertConfig, BertModel
    torch.manual_seed(0)
    model = BertModel(BertConfig(attn_implementation="sdpa")).half().cuda().eval()
    lengths = torch.randint(16, 256, (40,), generator=torch.Generator().manual_seed(1)).tolist()
    batches = [torch.randint(1000, 30000, (32, n)) for n in lengths]

    def run_all():
        digest = hashlib.sha256()
        with torch.no_grad():
            for b in batches:
                ids = b.cuda()
                out = model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
                digest.update(out.float().mean(dim=1).cpu().numpy().tobytes())
        return digest.hexdigest()[:16]

    first, _ = timed(run_all)

    def one_round():
        total, sha = timed(run_all)
        step = total / len(batches)
        # The first step stays the first pass's: its batches met cold caches.
        return {"first_step_ms": first / len(batches), "step_ms": step,
                "texts_per_s": 32e3 / step, "output_sha": sha}

    return first, one_round, None


def rounded(result):
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in result.items()}


def medians(rounds):
    """One result of several rounds: each figure's median, the last digest."""
    out = dict(rounds[-1])
    for key, value in rounds[-1].items():
        if isinstance(value, float):
            out[key] = statistics.median(r[key] for r in rounds)
    return out


def load(name, replies):
    """A workload's first call's time, its round, and its generate (or None)."""
    if name == "bert-varlen":
        return embedding(replies)
    return generation(name, replies)


def serve(name, replies):
    """Rounds on demand, for alternate.py: a line "ready" once the workload is
    warm, then one JSON line per "round" read from stdin; "load NAME" warms
    another workload and says "ready" again; "quit" or the end of stdin
    ends it."""
    while name:
        first, one_round, _ = load(name, replies)
        print(json.dumps({"ready": True, "first_call_ms": round(first, 3)}), flush=True)
        name = None
        for line in sys.stdin:
            words = line.split()
            if words == ["round"]:
                print(json.dumps(rounded(one_round())), flush=True)
                continue
            if len(words) == 2 and words[0] == "load" and words[1] in CASES.keys() | {"bert-varlen"}:
                name = words[1]
            break


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("name", nargs="?", choices=sorted(CASES) + ["bert-varlen"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--list", action="store_true",
                        help="print the names of run.sh's group 'generation', and exit")
    parser.add_argument("--serve", action="store_true",
                        help="after warming up, measure a round per 'round' line on stdin "
                             "(alternate.py)")
    args = parser.parse_args()
    if args.list:
        print(" ".join(GENERATION))
        return
    if args.name is None:
        parser.error("name a workload (or --list)")
    replies = scuda_function("scuda_replies_awaited", ctypes.c_uint64)
    if args.serve:
        serve(args.name, replies)
        return
    before = replies() if replies else None
    first, one_round, _ = load(args.name, replies)
    result = medians([one_round() for _ in range(args.repeats)])
    result.update({"model": args.name, "device": torch.cuda.get_device_name(),
                   "first_call_ms": first})
    if replies:
        result["replies"] = replies() - before
    print(json.dumps(rounded(result)))


if __name__ == "__main__":
    main()
