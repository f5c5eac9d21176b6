"""Run spantree over a JSON-lines corpus with Dask distributed.

Each line is a record of `spantree infer`'s input format with "scores"
(an (n+1) x (n+1) matrix, `null` for forbidden arcs, labeled cells as
arrays); the output has one JSON line per input line, in input order, with
the fields `spantree infer` writes for the same quantities ("id", "n",
"rooting", "backend", then "log_z", "marginals", "entropy"), or an error
record {"id", "line", "error": {"kind", "message"}}. Blank lines are
skipped and counted, as by the command.

    python examples/python/dask_corpus.py CORPUS.jsonl OUT.jsonl --workers 3

Here a LocalCluster starts the worker processes; on a real cluster, pass
`--scheduler tcp://HOST:8786` instead and the same code runs there (the
workers need the `spantree` wheel installed). Each partition becomes one
ragged batch: one call into spantree per partition, not per sentence.
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np

QUANTITIES = ("log_z", "marginals", "entropy")


def to_scores(matrix):
    """A JSON scores matrix (null = -inf) as a float64 array."""
    def cell(x):
        if isinstance(x, list):
            return [-math.inf if v is None else float(v) for v in x]
        return -math.inf if x is None else float(x)

    rows = [[cell(x) for x in row] for row in matrix]
    return np.array(rows, dtype=np.float64)


def infer_partition(records, rooting="single", backend="accurate", quantities=QUANTITIES):
    """(line number, text) pairs to (line number, output JSON) pairs; runs on a worker."""
    import spantree

    out = []
    for line, text in records:
        if not text.strip():
            continue
        record = json.loads(text)
        rid = record.get("id")
        try:
            scores = to_scores(record["scores"])
            d = spantree.TreeDistribution(scores, rooting=rooting, backend=backend,
                                          labeled=scores.ndim == 3)
            result = {"id": rid, "n": scores.shape[0] - 1, "rooting": rooting, "backend": backend}
            if "log_z" in quantities:
                result["log_z"] = d.log_partition()
            if "marginals" in quantities:
                mu = d.marginals()
                # Labeled graphs: arc marginals, and per label as the command does.
                result["marginals"] = (mu.sum(axis=-1) if scores.ndim == 3 else mu).tolist()
                if scores.ndim == 3:
                    result["label_marginals"] = mu.tolist()
            if "entropy" in quantities:
                result["entropy"] = d.entropy()
        except spantree.SpantreeError as e:
            result = {"id": rid, "line": line,
                      "error": {"kind": e.kind, "message": e.message}}
        out.append((line, json.dumps(result)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("output")
    ap.add_argument("--workers", type=int, default=3, help="LocalCluster worker processes")
    ap.add_argument("--scheduler", help="address of an existing Dask scheduler")
    ap.add_argument("--partitions", type=int, default=None)
    ap.add_argument("--rooting", default="single")
    ap.add_argument("--backend", default="accurate")
    ap.add_argument("--quantities", default=",".join(QUANTITIES))
    args = ap.parse_args(argv)

    import dask.bag as db
    from dask.distributed import Client, LocalCluster

    with open(args.corpus) as f:
        lines = list(enumerate(f.read().splitlines(), start=1))
    if args.scheduler:
        client, cluster = Client(args.scheduler), None
    else:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1,
                               processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        partitions = args.partitions or 4 * args.workers
        bag = db.from_sequence(lines, npartitions=max(1, min(partitions, len(lines))))
        results = bag.map_partitions(
            infer_partition, rooting=args.rooting, backend=args.backend,
            quantities=tuple(args.quantities.split(",")),
        ).compute()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    results.sort()  # input order (a bag keeps it; sorting states the contract)
    with open(args.output, "w") as f:
        for _, text in results:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
