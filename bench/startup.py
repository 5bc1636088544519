"""Start-up: `import scidocs_eval`, `scidocs-eval --help`, `tasks`, `benchmarks` and a bad option, on this checkout
and (``--before``) another checkout, each in its own virtual environment.

Each command runs `--repeat` times in a fresh interpreter; the script prints the median wall time, the median CPU
time (user + sys of the process: what a shared machine disturbs least) and the number of modules the command
loaded, with the load average before and after (the target: 0.3 s for a command, 0.5 s for the import, on an
idle machine).

    python bench/startup.py --before /work/main
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path

PROBE = r"""
import contextlib, io, resource, sys, time
began = time.perf_counter()
argv = sys.argv[1:]
if argv == ["import"]:
    import scidocs_eval
else:
    from scidocs_eval.cli.main import main
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(argv)
        except SystemExit:
            pass
usage = resource.getrusage(resource.RUSAGE_SELF)
print(usage.ru_utime + usage.ru_stime, len(sys.modules))
"""

COMMANDS = {"import scidocs_eval": ["import"], "scidocs-eval --help": ["--help"], "scidocs-eval tasks": ["tasks"],
            "scidocs-eval benchmarks": ["benchmarks"], "scidocs-eval run --bad-option": ["run", "--bad-option"]}


def measure(checkout: Path, argv: list[str], repeat: int) -> tuple[float, float, int]:
    """Median wall seconds (interpreter start included), median CPU seconds, modules loaded."""
    python = checkout / ".venv" / "bin" / "python"
    walls, cpus, modules = [], [], 0
    for _ in range(repeat):
        began = time.perf_counter()
        done = subprocess.run([str(python), "-c", PROBE, *argv], cwd=checkout, capture_output=True, text=True,
                              check=True)
        walls.append(time.perf_counter() - began)
        cpu, modules = done.stdout.split()
        cpus.append(float(cpu))
    return statistics.median(walls), statistics.median(cpus), int(modules)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="another checkout (with its .venv) to measure first")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    here = Path(__file__).resolve().parents[1]
    print(f"{platform.node()}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M')}, load before "
          f"{os.getloadavg()[0]:.1f}; median of {args.repeat}")
    figures = {}
    for label, checkout in ([("before", args.before)] if args.before else []) + [("after", here)]:
        for name, argv in COMMANDS.items():
            wall, cpu, modules = measure(checkout.resolve(), argv, args.repeat)
            figures[f"{label} {name}"] = {"wall": wall, "cpu": cpu, "modules": modules}
            print(f"{label:6} {name:34} wall {wall:5.2f} s  cpu {cpu:5.2f} s  {modules:5d} modules")
    print(f"load after {os.getloadavg()[0]:.1f}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
