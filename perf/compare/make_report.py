#!/usr/bin/env python3
"""make_report.py - turns the raw outputs of perf/compare.sh into one side-by-side table.

    make_report.py --raw DIR --collective allreduce --ranks 2,4 --docs docs

Reads DIR/<library>_n<ranks>_r<round>.txt (plexus-bench or a peer benchmark; the first nine
columns of their rows are the same: size count type redop root time algbw busbw #wrong; per size
the fastest round counts), DIR/stream.txt
(perf/compare/stream_bound.cpp) and DIR/machine.txt, and writes
  docs/performance-<collective>.md   the tables: busbw per size and library, Plexus / best peer,
                                     the memory-bandwidth bound, 4 KiB latency, the verdicts
  docs/performance-<collective>.png  busbw against size, one panel per rank count (gnuplot)
and replaces the block between the markers "<!-- perf/compare.sh COLLECTIVE: begin/end -->" in
docs/performance.md with the same tables (appending it when the markers are missing).
Prints the tables to stdout. Standard library only.
"""
import argparse
import datetime
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from doc_block import replace_block  # noqa: E402  (perf/lib/doc_block.py)

# "plexus_reg" is plexus-bench -R 1: buffers from plx_mem_alloc, registered on the communicator
# (as nccl-tests -R); the peers have no such mode.
LIBRARIES = [("plexus", "Plexus"), ("plexus_reg", "Plexus, registered"), ("gloo", "Gloo"),
             ("openmpi", "Open MPI"), ("mpich", "MPICH")]
PLEXUS_KEYS = [("plexus", "Plexus"), ("plexus_reg", "Plexus, registered")]
# Collectives whose peers run in place by definition (MPI_Bcast and Gloo's broadcast have one
# buffer): their tables also show Plexus in place (plexus-bench's in-place columns of the same
# runs), the same operation as the peers', beside its out-of-place rows.
IN_PLACE_PEERS = ("broadcast",)
IN_PLACE = ("plexus_inplace", "Plexus, in place")

TARGET_RATIOS = (1.5, 2.0)
TARGET_MIN_BYTES = 1 << 20
TARGET_MAX_BYTES = 64 << 20
LATENCY_BYTES = 4096


def libraries(collective):
    """The table's columns: LIBRARIES, with Plexus in place where the peers are in place."""
    return LIBRARIES[:2] + [IN_PLACE] + LIBRARIES[2:] if collective in IN_PLACE_PEERS \
        else LIBRARIES


def plexus_keys(collective):
    return PLEXUS_KEYS + [IN_PLACE] if collective in IN_PLACE_PEERS else PLEXUS_KEYS


def bus_factor(collective, n):
    """busbw / algbw, as plexus-bench and nccl-tests doc/PERFORMANCE.md."""
    if collective == "allreduce":
        return 2.0 * (n - 1) / n
    if collective in ("broadcast", "reduce", "sendrecv"):
        return 1.0
    return (n - 1) / n


def parse_bench(path, factor, in_place=False):
    """{size: (time_us, busbw, wrong)} of the out-of-place columns (the in-place ones with
    in_place: plexus-bench's columns 10-13), the description, a note. busbw is recomputed from
    the size and the time (printed with more digits than busbw)."""
    rows, description, note = {}, "", ""
    if not os.path.exists(path):
        return rows, description, "not run"
    with open(path, errors="replace") as f:
        for line in f:
            line = re.sub(r"^\[\d+\] ", "", line.rstrip("\n"))
            if line.startswith("# peer "):
                description = line[len("# peer "):]
            elif line.startswith("# plexus-bench version"):
                description = line[2:]
            elif line.startswith("#  Rank  0 ") and "device cpu" in line:
                description += ", transport " + line.split("]")[-1].strip()
            elif "not supported" in line:
                note = "not supported"
            if not line or line.startswith("#"):
                continue
            fields = line.split()
            first = 9 if in_place else 5  # the time column of the half read
            if len(fields) < first + 4 or not fields[0].isdigit():
                continue
            try:
                size, time_us = int(fields[0]), float(fields[first])
                busbw = size / (time_us * 1e3) * factor if time_us > 0 else \
                    float(fields[first + 2])
                rows[size] = (time_us, busbw, fields[first + 3])
            except ValueError:
                continue
    status_path = path + ".status"
    if os.path.exists(status_path):
        status = open(status_path).read().strip()
        if status not in ("0", "") and not note:
            note = "timed out" if status in ("124", "137") else f"exit {status}"
    return rows, description, note


def parse_rounds(raw, key, n, factor):
    """parse_bench over every round of one library and rank count (KEY_nN_rK.txt): per size the
    fastest round's time (best-of-rounds, as STREAM reports its best pass), and a #wrong that is
    not 0 if any round's is not. "plexus_inplace" reads plexus's files, in-place columns."""
    in_place = key == IN_PLACE[0]
    key = "plexus" if in_place else key
    paths = sorted(glob.glob(os.path.join(raw, f"{key}_n{n}_r*.txt")))
    if not paths:
        return parse_bench(os.path.join(raw, f"{key}_n{n}.txt"), factor, in_place)
    best, description, note = {}, "", ""
    for path in paths:
        rows, desc, why = parse_bench(path, factor, in_place)
        description, note = description or desc, note or why
        for size, (time_us, busbw, wrong) in rows.items():
            if size not in best:
                best[size] = (time_us, busbw, wrong)
                continue
            keep = best[size] if best[size][0] <= time_us else (time_us, busbw, best[size][2])
            bad = wrong if wrong not in ("0", "N/A") else keep[2]
            best[size] = (keep[0], keep[1], bad)
    return best, description, note


def parse_stream(path):
    """{threads: (copy_GBs, triad_GBs)}."""
    out = {}
    if os.path.exists(path):
        for line in open(path):
            fields = line.split()
            if len(fields) == 3 and fields[0].isdigit():
                out[int(fields[0])] = (float(fields[1]), float(fields[2]))
    return out


def human(size):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def fmt(value, digits=2):
    return "—" if value is None else f"{value:.{digits}f}"


def fmt_ratio(value):
    if value is None:
        return "—"
    return f"{value:.2f}x" if value >= 0.1 else f"{value:.2g}x"


def fmt_bw(value):
    """GB/s with 3 significant digits, so slow rows do not print as 0.00."""
    if value is None:
        return "—"
    return f"{value:.2f}" if value >= 1 else f"{value:.3g}"


def copy_threads(stream, n):
    """The stream measurement for n ranks: n threads, or the most measured below that."""
    usable = [t for t in stream if t <= n]
    return max(usable) if usable else None


def build_tables(args, data, stream, machine):
    lines, verdicts, summary = [], [], []
    for n in args.ranks:
        libs = data[n]
        t = copy_threads(stream, n)
        bound = stream[t][0] / (2 * n) if t else None
        place = "out of place" if args.collective not in IN_PLACE_PEERS else \
            ("Plexus out of place but in its column \"in place\"; the peers' " +
             args.collective + " is in place by definition, one buffer")
        lines.append(f"#### {args.collective}, {n} ranks on one host: busbw (GB/s, {place})\n")
        head = (["size"] + [name for _, name in args.libraries] + ["best peer"] +
                [f"{name} / best peer" for _, name in args.plexus_keys] + ["single-copy bound"])
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join(["---:"] * len(head)) + "|")
        sizes = sorted(set().union(*[set(rows) for rows, _, _ in libs.values()]))
        met = {(key, target): 0 for key, _ in args.plexus_keys for target in TARGET_RATIOS}
        checked = {key: 0 for key, _ in args.plexus_keys}
        for size in sizes:
            cells = [human(size)]
            peer_best = None
            for key, _ in args.libraries:
                rows = libs[key][0]
                if size not in rows:
                    cells.append(libs[key][2] or "—")
                    continue
                _, busbw, wrong = rows[size]
                cell = fmt_bw(busbw)
                if wrong not in ("0", "N/A"):
                    cell += f" (#wrong {wrong})"
                cells.append(cell)
                if not key.startswith("plexus") and wrong in ("0", "N/A"):
                    peer_best = max(peer_best or 0.0, busbw)
            cells.append(fmt_bw(peer_best))
            for key, _ in args.plexus_keys:
                mine = libs[key][0].get(size)
                ratio = mine[1] / peer_best if mine and peer_best and mine[2] in ("0", "N/A") \
                    else None
                cells.append(fmt_ratio(ratio))
                if TARGET_MIN_BYTES <= size <= TARGET_MAX_BYTES and ratio is not None:
                    checked[key] += 1
                    for target in TARGET_RATIOS:
                        met[(key, target)] += ratio >= target
            cells.append(fmt_bw(bound))
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        verdicts.append((n, met, checked))
        summary.append(n)
    # 4 KiB latency.
    lines.append(f"#### {args.collective}: time of one {human(LATENCY_BYTES)} operation (µs, "
                 "out of place, lower is better)\n")
    head = ["ranks"] + [name for _, name in args.libraries] + ["best peer", "Plexus no worse?"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join(["---:"] * len(head)) + "|")
    latency_verdicts = []
    for n in args.ranks:
        libs = data[n]
        cells, best = [str(n)], None
        for key, _ in args.libraries:
            row = libs[key][0].get(LATENCY_BYTES)
            cells.append(fmt(row[0]) if row else (libs[key][2] or "—"))
            if row and not key.startswith("plexus"):
                best = row[0] if best is None else min(best, row[0])
        plexus = libs["plexus"][0].get(LATENCY_BYTES)
        ok = plexus is not None and best is not None and plexus[0] <= best
        latency_verdicts.append((n, ok, plexus[0] if plexus else None, best))
        cells += [fmt(best), "yes" if ok else "no"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    # Verdicts.
    lines.append("#### Against the targets\n")
    for target in TARGET_RATIOS:
        for n, met, checked in verdicts:
            for key, name in args.plexus_keys:
                got, of = met[(key, target)], checked[key]
                verdict = "not measured" if not of else "met" if got == of else "not met"
                lines.append(f"- {name}: busbw ≥ {target}x the best peer from "
                             f"{human(TARGET_MIN_BYTES)} to {human(TARGET_MAX_BYTES)}, {n} ranks: "
                             f"**{verdict}** ({got} of {of} measured sizes).")
    for n, ok, mine, best in latency_verdicts:
        verdict = "not measured" if mine is None or best is None else "met" if ok else "not met"
        lines.append(f"- {human(LATENCY_BYTES)} latency no worse than the best peer's, {n} ranks: "
                     f"**{verdict}** (Plexus {fmt(mine)} µs, best peer {fmt(best)} µs).")
    lines.append("")
    return lines


def write_plot(args, data, stream, png, raw):
    """busbw against size, one panel per rank count; returns an error text or ''."""
    script = [f"set terminal pngcairo size {560 * len(args.ranks)},520 font ',10'",
              f"set output '{png}'",
              f"set multiplot layout 1,{len(args.ranks)} title "
              f"'{args.collective} busbw (out of place) vs message size'",
              "set logscale x 2", "set logscale y 10", "set grid", "set format y '%g'",
              "set xlabel 'message size'", "set ylabel 'busbw (GB/s)'",
              "set key below"]
    sizes = sorted({s for n in args.ranks for rows, _, _ in data[n].values() for s in rows})
    tics = ", ".join(f"'{human(s).replace(' ', '')}' {s}" for s in sizes)
    if tics:
        script.append(f"set xtics ({tics})")
        script.append(f"set xrange [{sizes[0] / 1.4}:{sizes[-1] * 1.4}]")
    for n in args.ranks:
        plots = []
        for key, name in args.libraries:
            rows = data[n][key][0]
            points = [(s, v[1]) for s, v in sorted(rows.items()) if v[1] > 0]
            if not points:
                continue
            path = os.path.join(raw, f"plot_{key}_n{n}.dat")
            with open(path, "w") as f:
                f.writelines(f"{s} {b}\n" for s, b in points)
            plots.append(f"'{path}' using 1:2 with linespoints title '{name}'")
        t = copy_threads(stream, n)
        if t:
            plots.append(f"{stream[t][0] / (2 * n)} with lines dashtype 2 lc 'black' "
                         "title 'single-copy memory bound'")
        script.append(f"set title '{n} ranks'")
        script.append("plot " + ", ".join(plots) if plots else "plot 0 notitle")
    script.append("unset multiplot")
    try:
        subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=True,
                       timeout=60, capture_output=True)
    except (OSError, subprocess.SubprocessError) as e:
        return f"no plot: gnuplot failed ({e})"
    return ""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--raw", required=True)
    p.add_argument("--collective", default="allreduce")
    p.add_argument("--ranks", default="2,4")
    p.add_argument("--docs", required=True)
    args = p.parse_args()
    args.ranks = [int(n) for n in args.ranks.split(",") if n]
    args.libraries = libraries(args.collective)
    args.plexus_keys = plexus_keys(args.collective)

    data = {n: {key: parse_rounds(args.raw, key, n, bus_factor(args.collective, n))
                for key, _ in args.libraries} for n in args.ranks}
    stream = parse_stream(os.path.join(args.raw, "stream.txt"))
    machine = open(os.path.join(args.raw, "machine.txt")).read().strip() \
        if os.path.exists(os.path.join(args.raw, "machine.txt")) else ""
    run_line = open(os.path.join(args.raw, "command.txt")).read().strip() \
        if os.path.exists(os.path.join(args.raw, "command.txt")) else "perf/compare.sh"

    base = f"performance-{args.collective}"
    png = os.path.join(args.docs, base + ".png")
    plot_error = write_plot(args, data, stream, os.path.abspath(png), args.raw)

    today = datetime.date.today().isoformat()
    block = [f"Measured {today} with `{run_line}`.\n", "Machine:\n", "```", machine, "```\n",
             "Libraries (as each benchmark names itself):\n"]
    n0 = args.ranks[0]
    for key, name in args.libraries:
        desc = data[n0][key][1] or data[n0][key][2] or "not run"
        block.append(f"- {name}: {desc}")
    block.append("")
    if stream:
        block.append("Memory bandwidth (perf/compare/stream_bound.cpp, STREAM counting, GB/s):\n")
        block.append("| threads | copy | triad | single-copy busbw bound for that many ranks |")
        block.append("|---:|---:|---:|---:|")
        for t, (copy, triad) in sorted(stream.items()):
            block.append(f"| {t} | {copy:.2f} | {triad:.2f} | {copy / (2 * t):.2f} |")
        block.append("")
    block += build_tables(args, data, stream, machine)
    if plot_error:
        block.append(f"({plot_error})\n")
    else:
        block.append(f"![{args.collective} busbw against size]({base}.png)\n")
    text = "\n".join(block)

    with open(os.path.join(args.docs, base + ".md"), "w") as f:
        f.write(f"# {args.collective}: Plexus beside Gloo, Open MPI and MPICH\n\n"
                "Written by `perf/compare.sh`; the method is in "
                "[performance.md](performance.md).\n\n" + text)
    perf_md = os.path.join(args.docs, "performance.md")
    if os.path.exists(perf_md):
        replace_block(perf_md, f"<!-- perf/compare.sh {args.collective}: begin -->",
                      f"<!-- perf/compare.sh {args.collective}: end -->", text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
