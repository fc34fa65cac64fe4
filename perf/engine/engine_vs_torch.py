#!/usr/bin/env python3
"""engine_vs_torch.py - plexus-train against the same GPT in PyTorch, one process, on the CPU.

    perf/engine/engine_vs_torch.py [--build-dir build] [--shapes L4C128H4T64B16,L6C256H8T128B8]
                                   [--rounds 3] [--steps 40] [--skip 5] [--markdown]

For every shape (L layers, C embedding width, H heads, T sequence length, B batch) and round,
runs one after another (interleaved, so a change in the host's load hits every column alike):

  plexus            plexus-train, one process, its default threads (all physical cores)
  torch             perf/engine/torch_gpt.py: torch.set_num_threads(1), OPENBLAS_NUM_THREADS=2
                    (PyTorch's fastest CPU setting on 2 cores for these shapes)
  torch avx512      the same with OPENBLAS_CORETYPE=SkylakeX and ATEN_CPU_CAPABILITY=avx512
  plexus avx512     plexus-train with OPENBLAS_CORETYPE=SkylakeX
  plexus bf16       plexus-train --autocast bf16 (the linear layers' GEMMs on AVX512-BF16; the
                    host's OpenBLAS kernels for attention): not the same arithmetic as the fp32
                    columns, so its loss is printed but not compared
  (the avx512 columns only where /proc/cpuinfo lists avx512f, avx512bw, avx512dq and avx512vl,
  the bf16 column only where it lists avx512_bf16 too)

Both programs start from the same weights and train on the same windows (torch_gpt.py draws
them as the engine does), so their losses are printed side by side as a check that they run
the same model. The figure of a run is the median tokens/s of its steps after --skip; a column's
figure is the best round's. GFLOP/s counts 6 N + 12 L T C floating-point operations per token
(N parameters; the second term is attention's two (T,T) products, forward and backward, as
the engine computes them over the full square).

Environment: the host's own OPENBLAS_CORETYPE (if any) applies to the plain columns, as a user
would run them. PYTHON (default /usr/bin/python3) runs torch_gpt.py; without torch there, only
the plexus columns are printed. Exit status: 0, 1 when a run failed, 2 for bad usage.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def parse_shape(text):
    m = re.fullmatch(r"L(\d+)C(\d+)H(\d+)T(\d+)B(\d+)", text)
    if not m:
        raise argparse.ArgumentTypeError("shape %r is not like L4C128H4T64B16" % text)
    return dict(zip(("L", "C", "H", "T", "B"), map(int, m.groups())))


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            return set(next(l for l in f if l.startswith("flags")).split(":", 1)[1].split())
    except (OSError, StopIteration):
        return set()


def flops_per_token(s):
    L, C, T, V = s["L"], s["C"], s["T"], 256
    params = V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C
    return 6 * params + 12 * L * T * C


def model_args(s, steps):
    return ["--n-layer", str(s["L"]), "--n-embd", str(s["C"]), "--n-head", str(s["H"]),
            "--seq-len", str(s["T"]), "--batch-size", str(s["B"]), "--steps", str(steps)]


def run(cmd, env, metrics_path=None, timeout=1800):
    """Runs cmd; returns the per-step JSON rows (from metrics_path, or stdout's JSON lines)."""
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (cmd[0], proc.returncode,
                                                 (proc.stderr or proc.stdout)[-600:]))
    text = open(metrics_path).read() if metrics_path else proc.stdout
    return [json.loads(l) for l in text.splitlines() if l.startswith("{")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.environ.get("BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--data", default=os.path.join(ROOT, "data", "moby_dick.txt"))
    ap.add_argument("--shapes", default="L4C128H4T64B16,L6C256H8T128B8")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--skip", type=int, default=5, help="first steps left out of the figure")
    ap.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    a = ap.parse_args()
    try:
        shapes = [(t, parse_shape(t)) for t in a.shapes.split(",")]
    except argparse.ArgumentTypeError as e:
        ap.error(str(e))
    if a.rounds < 1 or a.steps <= a.skip or a.skip < 0:
        ap.error("--rounds must be at least 1 and --steps above --skip (>= 0)")
    train = os.path.join(a.build_dir, "bin", "plexus-train")
    if not os.access(train, os.X_OK):
        print("engine_vs_torch.py: %s not built (--build-dir)" % train, file=sys.stderr)
        return 2
    python = os.environ.get("PYTHON", "/usr/bin/python3")
    try:
        have_torch = subprocess.run([python, "-c", "import torch"], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):  # no such program, or it hangs
        have_torch = False
    if not have_torch:
        print("engine_vs_torch.py: %s has no torch: plexus columns only" % python)
    flags = cpu_flags()
    avx512 = {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags
    bf16 = avx512 and "avx512_bf16" in flags

    base = dict(os.environ)
    for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        base.pop(k, None)
    fast = dict(base, OPENBLAS_CORETYPE="SkylakeX")
    columns = [("plexus", "plexus", base)]
    extra = {"plexus bf16": ["--autocast", "bf16"]}
    if have_torch:
        columns.append(("torch", "torch", dict(base, OPENBLAS_NUM_THREADS="2")))
        if avx512:
            columns.append(("torch avx512", "torch",
                            dict(fast, OPENBLAS_NUM_THREADS="2", ATEN_CPU_CAPABILITY="avx512")))
    if avx512:
        columns.append(("plexus avx512", "plexus", fast))
    if bf16:
        columns.append(("plexus bf16", "plexus", base))
    print("host: %d cpus, OPENBLAS_CORETYPE=%s, avx512 %s; %d rounds of %d steps (first %d "
          "left out)" % (os.cpu_count(), base.get("OPENBLAS_CORETYPE", "(unset)"),
                         "yes" if avx512 else "no", a.rounds, a.steps, a.skip), flush=True)

    failed = False
    results = {}
    with tempfile.TemporaryDirectory(prefix="plexus-engine-bench-") as tmp:
        for name, s in shapes:
            for rnd in range(a.rounds):
                for label, kind, env in columns:
                    metrics = os.path.join(tmp, "m.jsonl")
                    if os.path.exists(metrics):
                        os.remove(metrics)
                    if kind == "plexus":
                        cmd = [train, "--data", a.data, "--val-every", "0", "--log-every",
                               str(a.steps), "--checkpoint", "", "--metrics-file", metrics]
                    else:
                        cmd = [python, os.path.join(HERE, "torch_gpt.py"), "--data", a.data,
                               "--threads", "1"]
                        metrics = None
                    try:
                        rows = run(cmd + model_args(s, a.steps) + extra.get(label, []), env,
                                   metrics)
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        print("%s %s round %d failed: %s" % (name, label, rnd + 1, e))
                        failed = True
                        continue
                    tps = statistics.median(r["tokens_per_s"] for r in rows[a.skip:])
                    print("%s round %d %-14s %9.0f tok/s  loss at step %d %.6f" %
                          (name, rnd + 1, label, tps, rows[-1]["step"], rows[-1]["loss"]),
                          flush=True)
                    best = results.setdefault((name, label), {"tps": 0.0})
                    if tps > best["tps"]:
                        best.update(tps=tps, loss=rows[-1]["loss"])

    labels = [c[0] for c in columns]
    head = ["shape"] + ["%s tok/s" % l for l in labels] + ["plexus GFLOP/s"]
    ratios = []
    if have_torch:
        ratios.append(("plexus/torch", "plexus", "torch"))
        if avx512:
            ratios += [("plexus/torch avx512", "plexus", "torch avx512"),
                       ("avx512: plexus/torch", "plexus avx512", "torch avx512")]
    head += [r[0] for r in ratios]
    table = []
    for name, s in shapes:
        row = [name]
        for l in labels:
            v = results.get((name, l))
            row.append("%.0f" % v["tps"] if v else "failed")
        p = results.get((name, "plexus"))
        row.append("%.1f" % (p["tps"] * flops_per_token(s) / 1e9) if p else "-")
        for _, num, den in ratios:
            n, d = results.get((name, num)), results.get((name, den))
            row.append("%.2fx" % (n["tps"] / d["tps"]) if n and d else "-")
        table.append(row)
    widths = [max(len(h), *(len(r[i]) for r in table)) for i, h in enumerate(head)]
    print()
    print("  ".join(h.rjust(w) for h, w in zip(head, widths)))
    for r in table:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
    if have_torch:
        for name, _ in shapes:
            p, t = results.get((name, "plexus")), results.get((name, "torch"))
            if p and t:
                print("%s: final loss plexus %.6f, torch %.6f (relative difference %.1e)" %
                      (name, p["loss"], t["loss"], abs(p["loss"] - t["loss"]) / abs(t["loss"])))
    if a.markdown:
        print()
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in table:
            print("| " + " | ".join(r) + " |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
