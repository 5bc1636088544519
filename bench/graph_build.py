"""`data build --from openalex` at growing sizes: build time, peak memory and spill of the DuckDB engine, each
stage's time, the gzip JSON read rate per core, and today's in-memory `data build` on the same graphs where it can.

    python bench/graph_build.py [--sizes 100000,1000000] [--project 4000000,16000000] [--memory-limit 4GB]
                                [--threads 2] [--work DIR] [--in-memory-limit 8GB] [--in-memory-max 100000]
                                [--in-memory-timeout S] [--in-memory-only] [--spark]

For each size N it writes (once; kept in WORK) a synthetic OpenAlex snapshot of N works, about 20 references each
(`scidocs_eval.data.graph.synthetic`), then runs in a child process, one at a time:
- `data build --from openalex` on DuckDB with --memory-limit and --threads, the spill folder in WORK: wall time,
  every stage's time (the progress lines), peak RSS (the child's ru_maxrss, its check workers included) and peak
  spill (the spill folder's size, polled every 0.2 s), and the load average before and after;
- with --spark, the same on Spark local[THREADS];
- today's in-memory `data build --papers --citations` on the same graph (converted to JSON lines and TSV, not
  timed), with its address space capped at --in-memory-limit: time and peak RSS, or where it runs out (stopped
  after --in-memory-timeout seconds if given; --in-memory-only runs only this build, to find that size).
The read rate is the parts' compressed and decompressed bytes over the time of the stages that read every part
(`READ_STAGES`: the schema check of every line, the engine's parse into the works table, the second read for the
texts), per thread. With two sizes or more measured (this run's and earlier runs' rows, kept in
WORK/results.jsonl), the wall time and each stage's time are fitted as a + b * N through the two largest and
projected to the --project sizes (printed as projected, never as measured). Last, the full OpenAlex works
snapshot's build time on C cores is projected (printed as projected): the read stages from the read's rate per
core (the snapshot's size is the one developers.openalex.org/download gives: about 1.6 TB decompressed), the
other stages from their fit per work (the snapshot's works at about 6.7 KB each), the time divided by the cores.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import re
import resource
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FULL_SNAPSHOT_DECOMPRESSED_TB = 1.6
REAL_WORK_BYTES = 6700
"""A real OpenAlex work's decompressed JSON, about (the synthetic one is about 2,300 bytes)."""
CUTOFF = "2020"


def decompressed_size(part: Path) -> int:
    """A gzip part's decompressed size from its trailer (ISIZE: exact below 4 GiB)."""
    with open(part, "rb") as handle:
        handle.seek(-4, os.SEEK_END)
        return struct.unpack("<I", handle.read(4))[0]


def folder_size(folder: Path) -> int:
    total = 0
    for base, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(OSError):  # a spill file removed while walking
                total += os.path.getsize(os.path.join(base, name))
    return total


def child(argv: list[str], limit_bytes: int | None = None, poll: Path | None = None,
          timeout: float | None = None) -> dict:
    """Run `argv`; its wall time, peak RSS (MiB), exit status, stderr, the peak size of `poll` (MiB), and whether
    it was stopped after `timeout` seconds (killed: its time is then a lower bound)."""
    peak = [0]
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.2):
            peak[0] = max(peak[0], folder_size(poll))

    def cap() -> None:
        if limit_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    watcher = threading.Thread(target=watch, daemon=True) if poll is not None else None
    if watcher:
        watcher.start()
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=cap, text=True)
    stderr: list[str] = []
    reader = threading.Thread(target=lambda: stderr.append(process.stderr.read()), daemon=True)
    reader.start()  # read while it runs: a full pipe would stop it
    timer = threading.Timer(timeout, process.kill) if timeout else None
    if timer:
        timer.start()
    _, status, usage = os.wait4(process.pid, 0)  # reaped here: Popen.returncode stays None
    seconds = time.perf_counter() - started
    timed_out = bool(timer) and not timer.is_alive() and os.WIFSIGNALED(status)
    if timer:
        timer.cancel()
    reader.join()
    done.set()
    return {"seconds": seconds, "peak_rss_mib": usage.ru_maxrss / 1024, "rc": os.waitstatus_to_exitcode(status),
            "stderr": "".join(stderr), "spill_mib": peak[0] / 2**20, "timed_out": timed_out}


def snapshot_of(size: int, work: Path) -> Path:
    from scidocs_eval.data.graph.synthetic import write_synthetic_snapshot

    folder = work / f"openalex-{size}"
    if not (folder / "data/works/manifest").exists():
        started = time.perf_counter()
        write_synthetic_snapshot(folder, size, seed=0, works_per_part=50000)
        print(f"  wrote {folder} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return folder


def corpus_files(snapshot: Path) -> tuple[Path, Path]:
    """The snapshot as today's `data build` input: papers JSON lines (latest version, text, label, date) and TSV."""
    papers, edges = snapshot / "papers.jsonl", snapshot / "edges.tsv"
    if papers.exists():
        return papers, edges
    from scidocs_eval.data.graph.snapshot import abstract_from_inverted_index

    works: dict[str, dict] = {}
    for part in sorted(snapshot.rglob("*.gz")):
        with gzip.open(part) as handle:
            for line in handle:
                work = json.loads(line)
                key = work["id"].rsplit("/", 1)[1]
                if key not in works or work["updated_date"] > works[key]["updated_date"]:
                    works[key] = work
    kept = {k: w for k, w in works.items() if not w["is_retracted"] and not w["is_paratext"]}
    with open(papers, "w") as out:
        for key, w in kept.items():
            out.write(json.dumps({"paper_id": key, "title": w["title"], "publication_date": w["publication_date"],
                                  "abstract": abstract_from_inverted_index(w["abstract_inverted_index"]),
                                  "label": w["primary_topic"]["field"]["display_name"]}) + "\n")
    with open(edges, "w") as out:
        for key, w in kept.items():
            out.writelines(f"{key}\t{r.rsplit('/', 1)[1]}\n" for r in w["referenced_works"])
    return papers, edges


STAGE = re.compile(r"^  (?:duckdb: |spark: )?(.+?) \(([\d.]+) s\)$")
READ_STAGES = ("parts checked", "works_all", "texts: read")
"""The stages that read every part: the schema check of every line, the engine's parse into the works table, and
the second read for the text of the works the suite writes."""


def stage_seconds(stderr: str) -> dict[str, float]:
    """Each stage's time from the build's progress lines ("  duckdb: works_all (9.4 s)")."""
    stages: dict[str, float] = {}
    for line in stderr.splitlines():
        if match := STAGE.match(line):
            name = re.sub(r"^\d+ parts checked$", "parts checked", match.group(1))
            stages[name] = stages.get(name, 0.0) + float(match.group(2))
    return stages


def project(measured: dict[int, dict[str, float]], sizes: list[int]) -> dict[int, dict[str, float]]:
    """Each stage's time at `sizes`, fitted as a + b * N through the two largest measured sizes (b >= 0)."""
    small, large = sorted(measured)[-2:]
    projected = {}
    for size in sizes:
        stages = {}
        for stage in measured[large]:
            low, high = measured[small].get(stage, 0.0), measured[large][stage]
            slope = max(0.0, (high - low) / (large - small))
            stages[stage] = high + slope * (size - large)
        projected[size] = stages
    return projected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--project", default="4000000,16000000", help="sizes projected from the two largest")
    parser.add_argument("--memory-limit", default="4GB")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "graph-build-bench")
    parser.add_argument("--in-memory-limit", default="8GB")
    parser.add_argument("--in-memory-max", type=int, default=100000,
                        help="largest size the in-memory build is tried at (it is quadratic in places)")
    parser.add_argument("--in-memory-timeout", type=float, default=None,
                        help="seconds the in-memory build may run (stopped after: a lower bound, printed as such)")
    parser.add_argument("--in-memory-only", action="store_true",
                        help="only the in-memory build at --sizes (where it runs out of memory)")
    parser.add_argument("--spark", action="store_true")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    limit = int(args.in_memory_limit.removesuffix("GB")) * 2**30
    cli = [sys.executable, "-m", "scidocs_eval.cli"]
    rows = []
    results = args.work / "results.jsonl"  # every run's row, kept: a later run projects from earlier sizes too
    build_name = f"duckdb ({args.memory_limit}, {args.threads} threads)"
    stages_by_size: dict[int, dict[str, float]] = {}
    rates_by_size: dict[int, float] = {}
    if results.exists():
        for line in results.read_text().splitlines():
            row = json.loads(line)
            if row.get("build") == build_name and "stages" in row:
                stages_by_size[row["works"]] = {**row["stages"], "wall": row["seconds"]}
                if row.get("mb_per_s_per_core"):
                    rates_by_size[row["works"]] = row["mb_per_s_per_core"]
    for size in map(int, args.sizes.split(",")):
        snapshot = snapshot_of(size, args.work)
        parts = sorted(snapshot.rglob("*.gz"))
        compressed = sum(p.stat().st_size for p in parts)
        decompressed = sum(decompressed_size(p) for p in parts)
        engines = [] if args.in_memory_only else ["duckdb", "spark"] if args.spark else ["duckdb"]
        for engine in engines:
            out, spill = args.work / f"suite-{engine}-{size}", args.work / "spill"
            spill.mkdir(exist_ok=True)
            load_before = os.getloadavg()
            result = child([*cli, "data", "build", "--from", "openalex", str(snapshot), "--out-dir", str(out),
                            "--engine", engine, "--test-after", CUTOFF, "--memory-limit", args.memory_limit,
                            "--threads", str(args.threads), "--temp-dir", str(spill), "--master",
                            f"local[{args.threads}]", "--overwrite"], poll=spill)
            if result["rc"]:
                raise SystemExit(result["stderr"][-2000:])
            stages = stage_seconds(result["stderr"])
            if engine == "duckdb":
                stages_by_size[size] = {**stages, "wall": result["seconds"]}
            read = sum(stages.get(stage, 0.0) for stage in READ_STAGES) or None
            rows.append({"works": size, "build": f"{engine} ({args.memory_limit}, {args.threads} threads)",
                         "seconds": round(result["seconds"], 1), "peak_rss_mib": round(result["peak_rss_mib"]),
                         "spill_mib": round(result["spill_mib"]), "read_seconds": round(read, 1) if read else None,
                         "compressed_mb": round(compressed / 1e6, 1), "decompressed_mb": round(decompressed / 1e6, 1),
                         "mb_per_s_per_core": round(decompressed / 1e6 / read / args.threads, 1) if read else None,
                         "compressed_mb_per_s_per_core":
                             round(compressed / 1e6 / read / args.threads, 1) if read else None,
                         "load_before": [round(x, 1) for x in load_before],
                         "load_after": [round(x, 1) for x in os.getloadavg()],
                         "stages": {k: round(v, 1) for k, v in stages.items()}})
            print(json.dumps(rows[-1]), flush=True)
            if engine == "duckdb" and rows[-1]["mb_per_s_per_core"]:
                rates_by_size[size] = rows[-1]["mb_per_s_per_core"]
            with open(results, "a") as handle:
                handle.write(json.dumps(rows[-1]) + "\n")
        if size <= args.in_memory_max:
            papers, edges = corpus_files(snapshot)
            load_before = os.getloadavg()
            result = child([*cli, "data", "build", "--papers", str(papers), "--citations", str(edges), "--out-dir",
                            str(args.work / f"suite-memory-{size}"), "--test-after", CUTOFF, "--overwrite"],
                           limit_bytes=limit, timeout=args.in_memory_timeout)
            lines = result["stderr"].strip().splitlines()
            failed = (f"stopped after {args.in_memory_timeout:.0f} s (not finished: its time is a lower bound)"
                      if result["timed_out"] else (lines[-1][:160] if lines else f"exit status {result['rc']}")
                      if result["rc"] else None)
            rows.append({"works": size, "build": f"in-memory data build (address space {args.in_memory_limit})",
                         "seconds": round(result["seconds"], 1), "peak_rss_mib": round(result["peak_rss_mib"]),
                         "failed": failed, "load_before": [round(x, 1) for x in load_before],
                         "load_after": [round(x, 1) for x in os.getloadavg()]})
            print(json.dumps(rows[-1]), flush=True)
    if len(stages_by_size) >= 2 and args.project:
        for size, stages in project(stages_by_size, [int(n) for n in args.project.split(",")]).items():
            wall = stages.pop("wall")
            print(json.dumps({"works": size, "projected_not_measured": True, "from_sizes": sorted(stages_by_size)[-2:],
                              "seconds": round(wall), "stages": {k: round(v, 1) for k, v in stages.items()}}),
                  flush=True)
    if rates_by_size:  # the rate at the largest size measured (this run's or an earlier one's)
        rate = rates_by_size[max(rates_by_size)]
        other = other_stages_fit(stages_by_size)
        works = FULL_SNAPSHOT_DECOMPRESSED_TB * 1e12 / REAL_WORK_BYTES
        for cores in (2, 24, 64):
            read = FULL_SNAPSHOT_DECOMPRESSED_TB * 1e6 / (rate * cores)
            line = (f"projected, not measured: the full OpenAlex snapshot ({FULL_SNAPSHOT_DECOMPRESSED_TB} TB "
                    f"decompressed) on {cores} cores: the read stages {read / 3600:.2f} h at {rate} MB/s per core")
            if other:
                per_work, constant = other
                rest = per_work * works * args.threads / cores
                line += (f", the other stages {rest / 3600:.2f} h ({per_work * 1e6:.0f} s per million works on "
                         f"{args.threads} threads, {works / 1e6:.0f}M works at {REAL_WORK_BYTES} bytes), the fit's "
                         f"constant {constant:.0f} s: {(read + rest + constant) / 3600:.1f} h in all")
            print(line + ", the time divided by the cores (published one-pass reduction: ~2 h on 24 workers)")


def other_stages_fit(stages_by_size: dict[int, dict[str, float]]) -> tuple[float, float] | None:
    """The stages other than READ_STAGES (the wall time less the read stages) as seconds per work, and the wall
    time's constant, fitted through the two largest measured sizes; None with fewer than two."""
    if len(stages_by_size) < 2:
        return None
    small, large = sorted(stages_by_size)[-2:]

    def rest(size: int) -> float:
        return stages_by_size[size]["wall"] - sum(stages_by_size[size].get(s, 0.0) for s in READ_STAGES)
    per_work = max(0.0, (rest(large) - rest(small)) / (large - small))
    wall = (stages_by_size[large]["wall"] - stages_by_size[small]["wall"]) / (large - small)
    return per_work, stages_by_size[large]["wall"] - wall * large

if __name__ == "__main__":
    main()
