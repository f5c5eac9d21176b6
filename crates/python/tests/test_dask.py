"""The Dask example gives, line for line, what `spantree infer` gives."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from oracle import random_scores

ROOT = pathlib.Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "python" / "dask_corpus.py"


def spantree_command():
    """The command: $SPANTREE_BIN (make test sets it), else one on PATH,
    else `cargo run`."""
    if os.environ.get("SPANTREE_BIN"):
        return [os.environ["SPANTREE_BIN"]]
    if shutil.which("spantree"):
        return ["spantree"]
    return ["cargo", "run", "--quiet", "-p", "spantree-cli", "--"]


def json_scores(s):
    def cell(x):
        if np.ndim(x):
            return [None if v == -np.inf else float(v) for v in x]
        return None if x == -np.inf else float(x)

    return [[cell(x) for x in row] for row in s]


def corpus(path):
    rng = np.random.default_rng(20)
    lines = []
    for i in range(40):
        n = int(rng.integers(1, 9))
        lines.append(json.dumps({"id": i, "scores": json_scores(random_scores(rng, n, forbid=0.3))}))
    bad = random_scores(rng, 3)
    bad[0, 2] = float("nan")  # json.dumps writes NaN: an error record naming the arc
    lines.insert(5, json.dumps({"id": "bad", "scores": json_scores(bad)}))
    lines.insert(9, "")  # blank: skipped, counted
    lines.append(json.dumps({"id": "labeled", "scores": json_scores(random_scores(rng, 3, labels=2))}))
    path.write_text("\n".join(lines) + "\n")


def test_dask_example_equals_the_command(tmp_path):
    pytest.importorskip("dask.distributed")
    src, out = tmp_path / "corpus.jsonl", tmp_path / "dask.jsonl"
    corpus(src)
    subprocess.run([sys.executable, str(EXAMPLE), str(src), str(out), "--workers", "2"],
                   check=True, cwd=tmp_path, timeout=600)
    run = subprocess.run(
        spantree_command() + ["infer", "--quantities", "log_z,marginals,entropy", str(src)],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )
    assert run.returncode == 1, run.stderr  # 1: some lines became error records
    assert "1 of 43 lines failed" in run.stderr  # the blank line counts
    command = run.stdout.splitlines()
    ours = out.read_text().splitlines()
    assert len(ours) == len(command) == 42
    for a, b in zip(ours, command):
        a, b = json.loads(a), json.loads(b)
        assert a["id"] == b["id"]
        if "error" in b:
            assert a["error"]["kind"] == b["error"]["kind"] and a["line"] == b["line"]
            continue
        assert (a["n"], a["rooting"], a["backend"]) == (b["n"], b["rooting"], b["backend"])
        # rel 1e-12: the same engine on the same numbers; labeled arc
        # marginals are summed over labels here, in another order.
        for key in ("log_z", "entropy", "marginals", "label_marginals"):
            if key in b:
                np.testing.assert_allclose(np.array(a[key], float), np.array(b[key], float),
                                           rtol=1e-12, atol=1e-15)
