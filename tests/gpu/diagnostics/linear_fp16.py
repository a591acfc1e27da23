"""The smallest program that reaches cuBLASLt's fp16 GEMM with a bias epilogue
(t4's last layer under autocast): one Linear layer, printed checksum."""
import torch

torch.manual_seed(0)
m = torch.nn.Linear(512, 1000).cuda()
x = torch.randn(8, 512, device="cuda")
with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16):
    y = m(x)
print(f"RESULT linear_fp16 {y.float().sum().item()!r}")
