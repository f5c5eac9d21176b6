"""The binding's overhead, and torch-struct on the same batch.

A batch of 64 sentences of n = 36 words (every arc allowed, scores
~ N(0, 1), seed 0), single root: the entropy and its gradient
  * through the binding (TreeDistribution, threads=1);
  * in Rust (crates/api/examples/entropy_batch.rs: the same work on the
    same scores, no Python);
  * with torch-struct's NonProjectiveDependencyCRF (entropy, then
    backward through it: autograd of a determinant), if installed.

Build both sides in release mode first:

    (cd crates/python && maturin develop --release)       # or install a release wheel
    cargo build --release -p spantree-api --example entropy_batch
    python crates/python/bench/bench.py [--repeats 10]

Reports the best of --repeats wall times (seconds) and the ratios.
"""

import argparse
import json
import os
import pathlib
import subprocess
import tempfile
import time

import numpy as np

import spantree

ROOT = pathlib.Path(__file__).resolve().parents[3]


def batch(b=64, n=36, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(b, n + 1, n + 1))
    s[:, :, 0] = -np.inf
    s[:, np.arange(n + 1), np.arange(n + 1)] = -np.inf
    return s


def best_of(f, repeats, clock=time.perf_counter):
    best = np.inf
    for _ in range(repeats):
        t = clock()
        f()
        best = min(best, clock() - t)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--backend", default="accurate")
    args = ap.parse_args()
    s = batch()

    def binding():
        d = spantree.TreeDistribution(s, rooting="single", backend=args.backend)
        d.entropy()
        d.grad_entropy()

    def fused():
        spantree.TreeDistribution(s, rooting="single", backend=args.backend).compute("entropy", "grad_entropy")

    t_fused = best_of(fused, args.repeats)
    c_fused = best_of(fused, args.repeats, time.thread_time)
    t_py = best_of(binding, args.repeats)
    # threads=1 computes in this thread: its CPU time is the binding's work
    # plus its overhead, whatever else the machine runs.
    c_py = best_of(binding, args.repeats, time.thread_time)

    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    exe = target / "release" / "examples" / "entropy_batch"
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for g in s:
            rows = [[None if x == -np.inf else float(x) for x in row] for row in g]
            f.write(json.dumps({"scores": rows}) + "\n")
    out = subprocess.run([str(exe), f.name, str(args.repeats), args.backend], check=True,
                         capture_output=True, text=True).stdout.split()
    os.unlink(f.name)
    t_one, c_one, t_phased, c_phased = map(float, out[:4])
    print(f"batch 64 x n=36, entropy + grad_entropy, single root, {args.backend}, 1 thread")
    print("                                           wall ms   cpu ms   ratio (wall, cpu)")
    print(f"binding, .entropy() then .grad_entropy()  {t_py * 1e3:8.2f} {c_py * 1e3:8.2f}")
    print(f"binding, .compute(entropy, grad_entropy)  {t_fused * 1e3:8.2f} {c_fused * 1e3:8.2f}")
    print(f"rust, phased (as the two calls)           {t_phased * 1e3:8.2f} {c_phased * 1e3:8.2f}   "
          f"two calls / phased = {t_py / t_phased:.3f}, {c_py / c_phased:.3f}")
    print(f"rust, graph by graph (as compute)         {t_one * 1e3:8.2f} {c_one * 1e3:8.2f}   "
          f"compute / graph by graph = {t_fused / t_one:.3f}, {c_fused / c_one:.3f}")

    try:
        import torch
        from torch_struct import NonProjectiveDependencyCRF
    except ImportError as e:
        print(f"torch-struct: not installed ({e})")
        return
    torch.set_num_threads(1)
    ts = torch.tensor(spantree.to_torch_struct(s))
    # torch-struct has no -inf on its diagonal (roots live there); the
    # spantree graph has every arc allowed, so the distributions agree.

    def torch_struct():
        # torch-struct 0.5's NonProjectiveDependencyCRF.entropy is not
        # implemented (returns None): H = ln Z - sum(mu * theta) from its
        # partition and marginals, differentiated by autograd.
        x = ts.clone().requires_grad_(True)
        dist = NonProjectiveDependencyCRF(x, multiroot=False)
        h = dist.partition - (dist.marginals * x).sum((-1, -2))
        h.sum().backward()
        return h

    t_ts = best_of(torch_struct, args.repeats)
    c_ts = best_of(torch_struct, args.repeats, time.thread_time)
    h_ts = torch_struct().detach().numpy()
    h_sp = spantree.entropy(s)
    print(f"torch-struct (autograd)                   {t_ts * 1e3:8.2f} {c_ts * 1e3:8.2f}   "
          f"torch-struct / compute = {t_ts / t_fused:.2f}, {c_ts / c_fused:.2f}")
    print(f"max |H_torch-struct - H_spantree| = {np.max(np.abs(h_ts - h_sp)):.2e} "
          "(torch-struct adds eps = 1e-5 to every Laplacian weight)")


if __name__ == "__main__":
    main()
