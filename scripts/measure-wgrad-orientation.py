#!/usr/bin/env python3
# Run on a GPU machine with PyTorch: python3 scripts/measure-wgrad-orientation.py
# Does the weight-gradient GEMM's orientation matter? dW = dY^T X (Megatron) vs dW^T = X^T dY (as calibrate times it).
import torch
torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True
def t(f, n=50):
    for _ in range(5): f()
    s=torch.cuda.Event(enable_timing=True); e=torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize(); s.record()
    for _ in range(n): f()
    e.record(); torch.cuda.synchronize(); return s.elapsed_time(e)/n*1000
for (tok,out,inp,name) in [(1024,6144,2048,'qkv'),(1024,2048,2048,'proj'),(1024,8192,2048,'fc1'),(1024,2048,8192,'fc2'),(2048,36864//8*1,12288,'gpt3 qkv t8')]:
    dy=torch.randn(tok,out,dtype=torch.float16,device='cuda'); x=torch.randn(tok,inp,dtype=torch.float16,device='cuda')
    a=t(lambda: dy.t()@x); b=t(lambda: x.t()@dy)
    print(f"{name:12s} tokens={tok} out={out} in={inp}: dY^T X {a:7.1f} us   X^T dY {b:7.1f} us   ratio {b/a:.3f}")
