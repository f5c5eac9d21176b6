"""Time compiled Chu-Liu-Edmonds peers on the graphs of the `decode` bench.

Two peers, both unconstrained rooting (spantree's `multi`):

* `ufal.chu_liu_edmonds` from PyPI (Cython binding of TurboParser's C++
  maximum spanning arborescence);
* `numba_cle` below: the same dense path-growing Chu-Liu-Edmonds (Tarjan
  1977, Camerini et al. 1979) as spantree's decoder, written here for numba
  (no numba implementation is published on PyPI), compiled once before
  timing.
 The graphs are those of `crates/bench/benches/decode.rs`
(`normal_graph(n, 1.0, seed = n)`): SplitMix64 + Box-Muller N(0, 1) scores,
re-implemented here bit for bit, so both sides decode the same matrices.

    python3 -m venv venv-peer
    venv-peer/bin/pip install numpy numba ufal.chu_liu_edmonds
    cargo run --release -p spantree-bench --example mst_scores > /tmp/mst_scores.txt
    venv-peer/bin/python crates/bench/peers/mst_peer.py --spantree-scores /tmp/mst_scores.txt

Prints, per n, the median wall time and the mean CPU time per call (both
including Python's call overhead, which the script also prints) and the score
of the tree found. With
`--spantree-scores FILE` (the output of the `mst_scores` example: lines
`rooting n score`), it also checks that both peers reach spantree's
multi-root maximum on every graph (to 1e-9: the same sum, in another order),
and fails otherwise.
"""

import argparse

import math
import statistics
import time

import numpy as np
from numba import njit
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


@njit(cache=False)
def numba_cle(scores):
    """Heads (index 0 unused, -1 everywhere when no tree) of the maximum
    arborescence of `scores[h, m]` (-inf: absent), root 0."""
    n1 = scores.shape[0]
    inc = scores.T.copy()  # inc[m, x]: the arc x -> m (rows merged on contraction)
    dep = np.empty((n1, n1), np.int64)  # the original dependent behind inc[m, x]
    for m in range(n1):
        dep[m, :] = m
    most = 2 * n1
    parent = np.full(most, -1, np.int64)
    in_h = np.zeros(most, np.int64)
    in_m = np.zeros(most, np.int64)
    in_s = np.zeros(most)
    slot_of = np.arange(n1)
    node_of_slot = np.arange(n1)
    next_member = np.full(n1, -1, np.int64)  # members of a slot: a linked list
    last_member = np.arange(n1)
    finished = np.zeros(n1, np.bool_)
    finished[0] = True
    on_path = np.zeros(n1, np.bool_)
    path = np.zeros(n1, np.int64)
    plen = 0
    nodes = n1
    new_row = np.empty(n1)
    new_dep = np.empty(n1, np.int64)
    fail = np.full(n1, -1, np.int64)
    for start in range(1, n1):
        if node_of_slot[start] < 0 or finished[start]:
            continue
        a = start
        while True:
            best = -np.inf
            bx = -1
            for x in range(n1):
                if slot_of[x] != a and inc[a, x] > best:
                    best = inc[a, x]
                    bx = x
            if bx < 0:
                return fail
            node = node_of_slot[a]
            in_h[node] = bx
            in_m[node] = dep[a, bx]
            in_s[node] = best
            on_path[a] = True
            path[plen] = a
            plen += 1
            u = slot_of[bx]
            if finished[u]:
                for i in range(plen):
                    finished[path[i]] = True
                    on_path[path[i]] = False
                plen = 0
                break
            if not on_path[u]:
                a = u
                continue
            at = 0
            while path[at] != u:
                at += 1
            cycle = np.sort(path[at:plen].copy())
            plen = at
            c = cycle[0]
            ident = nodes
            nodes += 1
            new_row[:] = -np.inf
            for v in cycle:
                parent[node_of_slot[v]] = ident
                inv = in_s[node_of_slot[v]]
                for x in range(n1):
                    cand = inc[v, x] - inv
                    if cand > new_row[x]:
                        new_row[x] = cand
                        new_dep[x] = dep[v, x]
            for v in cycle[1:]:
                next_member[last_member[c]] = v
                last_member[c] = last_member[v]
            x = c
            while x >= 0:
                slot_of[x] = c
                new_row[x] = -np.inf
                x = next_member[x]
            inc[c, :] = new_row
            dep[c, :] = new_dep
            for v in cycle:
                on_path[v] = False
                node_of_slot[v] = -1
            node_of_slot[c] = ident
            a = c
    heads = np.full(n1, -1, np.int64)
    stack = np.zeros(nodes, np.int64)
    top = 0
    for x in range(1, nodes):
        if parent[x] < 0:
            stack[top] = x
            top += 1
    while top > 0:
        top -= 1
        x = stack[top]
        heads[in_m[x]] = in_h[x]
        y = in_m[x]
        while y != x:
            p = parent[y]
            for z in range(1, nodes):
                if parent[z] == p and z != y:
                    stack[top] = z
                    top += 1
            y = p
    return heads


def median_time(f, budget=1.0):
    """The median wall time per call, and the mean CPU time of the thread per
    call (on a loaded machine the number to compare: see the example
    `mst_median`, which times spantree the same way)."""
    times = []
    cpu0 = time.thread_time()
    start = time.perf_counter()
    while time.perf_counter() - start < budget or len(times) < 5:
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    cpu = (time.thread_time() - cpu0) / len(times)
    return statistics.median(times), cpu


def read_spantree_scores(path):
    """`{n: score}` of the multi-root lines of the `mst_scores` example."""
    out = {}
    with open(path) as f:
        for line in f:
            rooting, n, score = line.split()
            if rooting == "multi":
                out[int(n)] = float(score)
    return out


def check(name, n, score, expected):
    if expected is None:
        return
    if n not in expected:
        raise SystemExit(f"no spantree score for n = {n}")
    if abs(score - expected[n]) > 1e-9 * max(1.0, abs(expected[n])):
        raise SystemExit(f"{name} n = {n}: score {score!r}, spantree {expected[n]!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spantree-scores", help="output of the mst_scores example")
    args = parser.parse_args()
    expected = read_spantree_scores(args.spantree_scores) if args.spantree_scores else None
    numba_cle(normal_scores(3, 3))  # compile before timing
    overhead, _ = median_time(lambda: None, 0.2)
    print(f"python call overhead: {overhead * 1e6:.2f} us")
    for n in [10, 36, 100, 200, 1000]:
        scores = normal_scores(n, n)
        # ufal: cell [i, j] is the score of word i having head j; missing arcs NaN.
        dep_head = np.ascontiguousarray(scores.T)
        dep_head[~np.isfinite(dep_head)] = np.nan
        heads, total = chu_liu_edmonds(dep_head)
        own = sum(scores[h, m] for m, h in enumerate(heads) if m > 0)
        budget = 2.0 if n >= 200 else 1.0
        t, c = median_time(lambda: chu_liu_edmonds(dep_head), budget)
        print(f"ufal  n = {n:4d}: median {t * 1e6:10.1f} us, cpu {c * 1e6:10.1f} us per tree, "
              f"score {own:.6f}, root children "
              f"{sum(1 for h in heads[1:] if h == 0)}")
        check("ufal", n, own, expected)
        nb = numba_cle(scores)
        nb_score = sum(scores[h, m] for m, h in enumerate(nb) if m > 0)
        t, c = median_time(lambda: numba_cle(scores), budget)
        print(f"numba n = {n:4d}: median {t * 1e6:10.1f} us, cpu {c * 1e6:10.1f} us per tree, "
              f"score {nb_score:.6f}")
        check("numba", n, nb_score, expected)
    if expected is not None:
        print("both peers reach spantree's maximum on every graph")


if __name__ == "__main__":
    main()
