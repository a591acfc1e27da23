#!/usr/bin/env python3
"""t8: a small BERT from transformers (BertConfig, random init: nothing is
downloaded) fine-tunes for sequence classification: 20 AdamW steps on seeded
random token ids and labels, dropout on, deterministic settings as in t2.
Eager attention (not SDPA), so that no fused attention kernel decides the
numerics. Prints the losses. Compare: exact."""
import os
import sys

os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"  # before torch is imported
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never try the network
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

STEPS = 20


def run(check):
    # warn_only: an op without a deterministic kernel is named in the RESULT
    # (nondeterministic_ops) instead of stopping the script.
    torch = common.setup(warn_only=True)
    import transformers
    from transformers import BertConfig, BertForSequenceClassification
    cfg = BertConfig(vocab_size=1000, hidden_size=128, num_hidden_layers=2,
                     num_attention_heads=4, intermediate_size=256,
                     max_position_embeddings=128, num_labels=2,
                     attn_implementation="eager")
    model = BertForSequenceClassification(cfg)  # random init on the CPU, seeded
    model = model.cuda().train()  # dropout on: CUDA RNG, seeded by manual_seed
    attn = getattr(model.config, "_attn_implementation", None)
    g = common.cpu_generator()
    ids = torch.randint(0, cfg.vocab_size, (16, 64), generator=g).cuda()
    mask = torch.ones_like(ids)
    labels = torch.randint(0, 2, (16,), generator=g).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    with common.nondeterministic_ops() as nd:
        for _ in range(STEPS):
            opt.zero_grad(set_to_none=True)
            out = model(input_ids=ids, attention_mask=mask, labels=labels)
            out.loss.backward()
            opt.step()
            losses.append(out.loss.detach())
        losses = torch.stack(losses).cpu().tolist()
    check(len(losses) == STEPS and common.finite(losses), f"losses finite: {losses}")
    check(common.trend_down(losses), f"loss goes down: {losses[:3]} ... {losses[-3:]}")
    print(f"t8: transformers {transformers.__version__}, attention {attn}", file=sys.stderr)
    return {"losses": common.hexlist(losses), "attn_implementation": attn,
            "nondeterministic_ops": sorted(nd)}


if __name__ == "__main__":
    common.main("t8_finetune_transformer", run)
