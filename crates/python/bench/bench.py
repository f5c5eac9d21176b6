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


def best_of(f, repeats):
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    s = batch()

    def binding():
        d = spantree.TreeDistribution(s, rooting="single")
        d.entropy()
        d.grad_entropy()

    t_py = best_of(binding, args.repeats)

    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    exe = target / "release" / "examples" / "entropy_batch"
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for g in s:
            rows = [[None if x == -np.inf else float(x) for x in row] for row in g]
            f.write(json.dumps({"scores": rows}) + "\n")
    out = subprocess.run([str(exe), f.name, str(args.repeats)], check=True,
                         capture_output=True, text=True).stdout.split()
    os.unlink(f.name)
    t_rust = float(out[0])
    print(f"batch 64 x n=36, entropy + grad_entropy, single root, accurate, 1 thread")
    print(f"binding   {t_py * 1e3:9.2f} ms")
    print(f"rust      {t_rust * 1e3:9.2f} ms   binding/rust = {t_py / t_rust:.3f}")

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
        x = ts.clone().requires_grad_(True)
        h = NonProjectiveDependencyCRF(x, multiroot=False).entropy
        h.sum().backward()
        return h

    t_ts = best_of(torch_struct, args.repeats)
    h_ts = torch_struct().detach().numpy()
    h_sp = spantree.entropy(s)
    print(f"torch-struct {t_ts * 1e3:6.2f} ms   torch-struct/binding = {t_ts / t_py:.2f}")
    print(f"max |H_torch-struct - H_spantree| = {np.max(np.abs(h_ts - h_sp)):.2e} "
          "(torch-struct adds eps = 1e-5 to every Laplacian weight)")


if __name__ == "__main__":
    main()
