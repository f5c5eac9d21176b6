"""Time a compiled Chu-Liu-Edmonds from PyPI on the graphs of the `decode` bench.

The peer is `ufal.chu_liu_edmonds` (Cython binding of TurboParser's C++
maximum spanning arborescence, unconstrained rooting, i.e. spantree's
`multi`). The graphs are those of `crates/bench/benches/decode.rs`
(`normal_graph(n, 1.0, seed = n)`): SplitMix64 + Box-Muller N(0, 1) scores,
re-implemented here bit for bit, so both sides decode the same matrices.

    python3 -m venv /work/venv-peer
    /work/venv-peer/bin/pip install numpy ufal.chu_liu_edmonds
    /work/venv-peer/bin/python crates/bench/peers/mst_peer.py

Prints, per n, the median time per call (including Python's call overhead,
which the script also prints) and the score of the tree found.
"""

import math
import statistics
import time

import numpy as np
from ufal.chu_liu_edmonds import chu_liu_edmonds

MASK = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def uniform(self):
        return (self.next_u64() >> 11) / float(1 << 53)

    def normal(self):
        u1 = 1.0 - self.uniform()
        u2 = self.uniform()
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


def normal_scores(n, seed):
    """`scores[h][m]`, -inf on column 0 and the diagonal (row-major draws)."""
    r = SplitMix64(seed)
    s = np.full((n + 1, n + 1), -np.inf)
    for h in range(n + 1):
        for m in range(n + 1):
            if m != 0 and h != m:
                s[h, m] = r.normal()
    return s


def median_time(f, budget=1.0):
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < budget or len(times) < 5:
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    overhead = median_time(lambda: None, 0.2)
    print(f"python call overhead: {overhead * 1e6:.2f} us")
    for n in [10, 36, 100, 200, 1000]:
        scores = normal_scores(n, n)
        # ufal: cell [i, j] is the score of word i having head j; missing arcs NaN.
        dep_head = np.ascontiguousarray(scores.T)
        dep_head[~np.isfinite(dep_head)] = np.nan
        heads, total = chu_liu_edmonds(dep_head)
        own = sum(scores[h, m] for m, h in enumerate(heads) if m > 0)
        t = median_time(lambda: chu_liu_edmonds(dep_head), 2.0 if n >= 200 else 1.0)
        print(f"n = {n:4d}: {t * 1e6:10.1f} us per tree, score {own:.6f}, root children "
              f"{sum(1 for h in heads[1:] if h == 0)}")


if __name__ == "__main__":
    main()
