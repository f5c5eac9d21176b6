"""The binding's overhead, and torch-struct on the same batch.

A batch of 64 sentences of n = 36 words (every arc allowed, scores
~ N(0, 1), seed 0), single root: the entropy and its gradient
  * through the binding, threads=1: ``TreeDistribution(s).compute("entropy",
    "grad_entropy")`` (one pass, graph by graph) and ``d.entropy()`` then
    ``d.grad_entropy()`` (the second call reuses the kept factors);
  * in Rust, no Python (crates/api/examples/entropy_batch.rs, the same
    scores): graph by graph (build, factorise, entropy, gradient, next
    graph: the fastest Rust route, the reference of the ratios), kept
    (build, factorise and entropy graph by graph, keeping the models, then
    the gradients: the Rust form of the two binding calls) and phased
    (every model, then each quantity over the batch);
  * with torch-struct's NonProjectiveDependencyCRF (entropy from its
    partition and marginals, then backward through it: autograd of a
    determinant), if installed, on one torch thread.

The routes run interleaved, one run of each per round, so that load from
other processes falls on all alike; the table gives medians over the
rounds of wall time and of the computing thread's CPU time (which does not
count the time other processes take the core away).

Build both sides in release mode first:

    (cd crates/python && maturin build --release -o /tmp/wheels) && pip install /tmp/wheels/spantree-*.whl
    cargo build --release -p spantree-api --example entropy_batch
    python crates/python/bench/bench.py [--repeats 20]
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


def timed(f):
    """(wall, thread cpu) seconds of one call of f."""
    w, c = time.perf_counter(), time.thread_time()
    f()
    return time.perf_counter() - w, time.thread_time() - c


class Rust:
    """The Rust example as a server: one line per run, one timing back."""

    def __init__(self, s, backend):
        target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
        exe = target / "release" / "examples" / "entropy_batch"
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            for g in s:
                rows = [[None if x == -np.inf else float(x) for x in row] for row in g]
                f.write(json.dumps({"scores": rows}) + "\n")
        self.path = f.name
        self.proc = subprocess.Popen([str(exe), f.name, backend], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        # The process's CPU clock (Linux: MAKE_PROCESS_CPUCLOCK(pid, SCHED)),
        # read here around each run: precise to the nanosecond, unlike
        # /proc's schedstat, which lags by up to a scheduler tick.
        self.clock = ((~self.proc.pid) << 3) | 2

    def run(self, route):
        cpu = time.clock_gettime(self.clock)
        self.proc.stdin.write(route + "\n")
        self.proc.stdin.flush()
        wall, _checksum = self.proc.stdout.readline().split()
        return float(wall), time.clock_gettime(self.clock) - cpu

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()
        os.unlink(self.path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--backend", default="accurate")
    args = ap.parse_args()
    s = batch()
    backend = args.backend

    def fused():
        spantree.TreeDistribution(s, backend=backend).compute("entropy", "grad_entropy")

    def one_pass_dropped():
        spantree.TreeDistribution(s, backend=backend, keep_factors=False).compute(
            "entropy", "grad_entropy")

    def two_calls():
        d = spantree.TreeDistribution(s, backend=backend)
        d.entropy()
        d.grad_entropy()

    rust = Rust(s, backend)
    routes = {
        "binding, compute(entropy, grad_entropy)": lambda: timed(fused),
        "binding, compute, keep_factors=False": lambda: timed(one_pass_dropped),
        "binding, .entropy() then .grad_entropy()": lambda: timed(two_calls),
        "rust, graph by graph": lambda: rust.run("graph"),
        "rust, kept (entropy pass, then gradients)": lambda: rust.run("kept"),
        "rust, phased (models, then quantities)": lambda: rust.run("phased"),
    }

    h_ts = None
    try:
        import torch
        from torch_struct import NonProjectiveDependencyCRF
    except ImportError as e:
        print(f"torch-struct: not installed ({e})")
    else:
        torch.set_num_threads(1)
        # torch-struct has no -inf on its diagonal (roots live there); the
        # spantree graph has every arc allowed, so the distributions agree.
        ts = torch.tensor(spantree.to_torch_struct(s))

        def torch_struct():
            # torch-struct 0.5's NonProjectiveDependencyCRF.entropy is not
            # implemented (returns None): H = ln Z - sum(mu * theta) from its
            # partition and marginals, differentiated by autograd.
            x = ts.clone().requires_grad_(True)
            dist = NonProjectiveDependencyCRF(x, multiroot=False)
            h = dist.partition - (dist.marginals * x).sum((-1, -2))
            h.sum().backward()
            return h

        routes["torch-struct (autograd), 1 thread"] = lambda: timed(torch_struct)
        h_ts = torch_struct().detach().numpy()

    for f in routes.values():  # warm-up: caches, allocator, page tables
        f()
        f()
    times = {name: [] for name in routes}
    for _ in range(args.repeats):
        for name, f in routes.items():
            times[name].append(f())
    rust.close()

    med = {name: np.median(np.array(t), axis=0) for name, t in times.items()}
    ref = med["rust, graph by graph"]
    kept = med["rust, kept (entropy pass, then gradients)"]
    print(f"batch 64 x n=36, entropy + grad_entropy, single root, {backend}, 1 thread; "
          f"medians of {args.repeats} interleaved rounds")
    print(f"{'route':44s} {'wall ms':>8s} {'cpu ms':>8s}   ÷ rust graph by graph (wall, cpu)")
    for name, (w, c) in med.items():
        print(f"{name:44s} {w * 1e3:8.2f} {c * 1e3:8.2f}   {w / ref[0]:.3f}, {c / ref[1]:.3f}")
    two = med["binding, .entropy() then .grad_entropy()"]
    print(f"two calls ÷ rust kept (the same work): {two[0] / kept[0]:.3f} (wall), "
          f"{two[1] / kept[1]:.3f} (cpu)")
    if h_ts is not None:
        t_ts = med["torch-struct (autograd), 1 thread"]
        t_sp = med["binding, compute(entropy, grad_entropy)"]
        h_sp = spantree.entropy(s, backend=backend)
        print(f"torch-struct ÷ spantree compute: {t_ts[0] / t_sp[0]:.2f} (wall), "
              f"{t_ts[1] / t_sp[1]:.2f} (cpu)")
        print(f"max |H_torch-struct - H_spantree| = {np.max(np.abs(h_ts - h_sp)):.2e} "
              "(torch-struct adds eps = 1e-5 to every Laplacian weight)")


if __name__ == "__main__":
    main()
