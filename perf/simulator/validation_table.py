#!/usr/bin/env python3
"""validation_table.py - the table of perf/simulator-validation.sh: per layout, link rate,
allreduce algorithm and size, the busbw the cost model predicted (plexus-bench -P 1's
"predicted_time", plx_comm_predict_time) against the busbw measured (out of place), and
measured / predicted time, marked "**" beyond 15%.

Usage: validation_table.py OUT_DIR STARTED DOCS LAYOUTS RATES ALGORITHMS [BLOCK]
  OUT_DIR holds <layout>-<rate>-<algorithm>.json (plexus-bench -J); DOCS is "" or a Markdown file
  whose block between the markers below is replaced (appended when they are missing); BLOCK
  names another block ("<!-- perf/simulator-validation.sh BLOCK: begin -->"). hierarchical_ring
  and hierarchical_halving are the hierarchical allreduce with its lanes forced.
Exit status 1 when a run's JSON is missing or any element was wrong, else 0.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from doc_block import replace_block  # noqa: E402  (perf/lib/doc_block.py)

MARKER = "<!-- perf/simulator-validation.sh{}: {} -->"
TOLERANCE = 0.15


def size_text(size):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def main():
    out_dir, started, docs, layouts, rates, algorithms = sys.argv[1:7]
    block = sys.argv[7] if len(sys.argv) > 7 else ""
    status = 0
    wrong = 0
    lines = [
        f"Measured {started}. busbw in GB/s, out of place, float32 sum; predicted = "
        "plx_comm_predict_time for the forced algorithm on the run's own communicator "
        "(parameters measured at its creation); ratio = measured time / predicted time; "
        f"** = more than {TOLERANCE:.0%} apart.",
        "",
        "| layout | rate | algorithm | size | predicted busbw | measured busbw | ratio |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    within = total = 0
    for layout in layouts.split(","):
        for rate in rates.split(","):
            for algorithm in algorithms.split(","):
                path = os.path.join(out_dir, f"{layout}-{rate}-{algorithm}.json")
                try:
                    with open(path) as f:
                        run = json.load(f)
                except (OSError, ValueError):
                    lines.append(f"| {layout} | {rate} | {algorithm} | - | - | failed | - |")
                    status = 1
                    continue
                for row in run["results"]:
                    oop = row["out_of_place"]
                    for half in ("out_of_place", "in_place"):
                        n = row[half]["nwrong"]
                        wrong += n if isinstance(n, int) and n > 0 else 0
                    predicted = row.get("predicted_time")
                    if not predicted or oop["time"] <= 0:
                        lines.append(f"| {layout} | {rate} | {algorithm} | "
                                     f"{size_text(row['size'])} | - | {oop['bus_bw']:.3f} | - |")
                        continue
                    ratio = oop["time"] / predicted
                    predicted_busbw = oop["bus_bw"] * ratio  # same bytes, predicted time
                    off = abs(ratio - 1) > TOLERANCE
                    total += 1
                    within += 0 if off else 1
                    used = oop["algorithm"].split(":")[-1]
                    # hierarchical_ring and hierarchical_halving run "hierarchical".
                    forced = algorithm.removesuffix("_ring").removesuffix("_halving")
                    name = algorithm if used == forced else f"{algorithm} (ran {used})"
                    lines.append(f"| {layout} | {rate} | {name} | {size_text(row['size'])} | "
                                 f"{predicted_busbw:.3f} | {oop['bus_bw']:.3f} | "
                                 f"{'**' if off else ''}{ratio:.2f}{'**' if off else ''} |")
    lines.append("")
    lines.append(f"{within} of {total} rows within {TOLERANCE:.0%}; #wrong {wrong}.")
    text = "\n".join(lines)
    print(text)
    if wrong:
        status = 1
    if docs:
        name = f" {block}" if block else ""
        replace_block(docs, MARKER.format(name, "begin"), MARKER.format(name, "end"), text + "\n")
        print(f"# wrote the table into {docs}")
    return status


if __name__ == "__main__":
    sys.exit(main())
