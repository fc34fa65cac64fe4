#!/usr/bin/env python3
"""Runs tests of torch's own distributed test suite over gloo (the control) and over plexus.

torch ships the suite as torch/testing/_internal/distributed/distributed_test.py (the class
DistributedTest._DistTestBase, run upstream by test/distributed/test_distributed_spawn.py). This
runner starts one child per backend (BACKEND=gloo, then BACKEND=plexus, WORLD_SIZE ranks each)
that imports the suite through plexus_suite_module.py (which registers plexus as a plugin
backend) and runs the chosen tests, each in WORLD_SIZE rank processes made by the suite itself.
It then prints a table (test, gloo result, plexus result) and a closing line

    N passed, M failed, K skipped

with plexus's counts, and exits non-zero if and only if plexus fails (or errors on) a test that
gloo passes.

    /usr/bin/python3 tests/torch/suite/run_distributed_suite.py            # the default list
    ... --tests test_broadcast,test_all_reduce_sum   # these (fnmatch patterns allowed)
    ... --full                                       # every test of _DistTestBase
    ... --list                                       # print the default list and the policy
    ... --start-method spawn                         # ranks as upstream starts them (slower)
    ... --run-skip-listed                            # run the plexus skip list over plexus too

The ranks are forked from the per-backend child by default (it has imported torch, the suite and
plexus_torch already, so each test costs well under a second instead of 4-10 s of imports per
rank on 2 cores); --start-method spawn starts them as upstream does, each importing
plexus_suite_module, which registers the backend. Tests whose suite gate names backends rather
than what they need run with that gate lifted where listed in LIFTED_GATES (marked * in the
table); tests plexus does not support by design are in PLEXUS_SKIP, reported as skipped with the
reason. Logs of a run with a plexus regression are kept (the path is printed).

The gloo control depends on torch alone, not on plexus: its results are kept, as ccache keeps
objects, in the user's cache folder shared by every clone (~/.cache/plexus/torch-suite-control/,
under XDG_CACHE_HOME where set; or --control-cache DIR) under a key of everything they depend on
(torch's version and suite files, this runner and plexus_suite_module.py, the python, the tests
and options), and reused while the key holds; only a control run in which every test passed or
skipped is kept. --no-control-cache runs it every time.

Needs PYTHONPATH to hold the build's python/ folder (plexus_torch), and a python with torch
(Debian's /usr/bin/python3). The "expecttest" package that torch's test utilities import is not
packaged by Debian: when it is missing, a stand-in from shims/ is put on the path.
"""
import argparse
import fnmatch
import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# ------------------------------------------------------------------------------------------------
# Policy
# ------------------------------------------------------------------------------------------------

# Tests not run over plexus, with the reason: what plexus does not do by design, or tests of
# another backend's own behaviour. They still run over gloo, so the table shows both.
PLEXUS_SKIP = {
    "test_send_recv_any_source":
        "recv from any source: plexus matches every receive to a named source "
        "(recvAnysource raises 'not supported')",
    "test_send_recv_any_source_autograd_profiler":
        "recv from any source: not supported by plexus (see test_send_recv_any_source)",
    "test_send_recv_any_source_torch_profiler":
        "recv from any source: not supported by plexus (see test_send_recv_any_source)",
    "test_barrier_timeout_global":
        "gloo-only: the per-call timeout of a process group (plexus bounds every wait "
        "by PLEXUS_TIMEOUT_MS instead)",
    "test_barrier_timeout_group":
        "gloo-only: process-group timeouts (see test_barrier_timeout_global)",
    "test_barrier_timeout_full_group":
        "gloo-only: process-group timeouts (see test_barrier_timeout_global)",
    **{name: "the suite's body builds its DDP model for mpi and gloo only (else NameError); its "
             "skip reason 'get_future is only supported on mpi, nccl and gloo' is the suite's "
             "gate (test_get_future, with the gate lifted, covers plexus's futures)"
       for name in ("test_accumulate_gradients_no_sync",
                    "test_accumulate_gradients_no_sync_grad_is_view",
                    "test_accumulate_gradients_no_sync_allreduce_hook",
                    "test_accumulate_gradients_no_sync_allreduce_with_then_hook")},
    "test_monitored_barrier_gloo": "monitored_barrier is implemented by gloo only",
    "test_monitored_barrier_gloo_subgroup": "monitored_barrier is implemented by gloo only",
    "test_monitored_barrier_gloo_rank_0_timeout": "monitored_barrier is implemented by gloo only",
    "test_monitored_barrier_failure_order": "monitored_barrier is implemented by gloo only",
    "test_monitored_barrier_wait_all_ranks": "monitored_barrier is implemented by gloo only",
}

# Tests whose skip condition in the suite names backends rather than what the test needs: their
# bodies are CPU-only and backend-independent for the backends listed here, which implement the
# operation, so over those backends the gate is lifted (that one gate: every other skip condition,
# e.g. a GPU count, still applies). {test: (backends, reason)}
_COALESCED = ("sum", "product", "min", "max", "group_sum", "group_product", "group_min",
              "group_max", "full_group_sum", "full_group_product", "full_group_min",
              "full_group_max")
_ALL_TO_ALL_SINGLE_CPU = (
    "test_all_to_all_single_equal_split", "test_all_to_all_single_equal_split_complex",
    "test_all_to_all_single_unequal_split", "test_all_to_all_single_unequal_split_complex",
    "test_all_to_all_single_equal_split_group", "test_all_to_all_single_unequal_split_group",
    "test_all_to_all_single_equal_split_full_group",
    "test_all_to_all_single_unequal_split_full_group",
)
_ALL_TO_ALL_LIST_CPU = ("test_all_to_all", "test_all_to_all_complex", "test_all_to_all_group",
                        "test_all_to_all_full_group")
LIFTED_GATES = {
    **{f"test_all_reduce_coalesced_{v}": (
        ("plexus",), "gated on {'gloo'}: the other built-in backends lack allreduce_coalesced; "
                     "plexus implements it") for v in _COALESCED},
    "test_scatter_object_list": (
        ("plexus",), "gated on {'gloo'}; the body is CPU-only (scatter_object_list)"),
    **{name: (("plexus",), "gated on the 'gpu' feature set {'nccl', 'gloo'}, but the body uses "
                           "CPU tensors for every backend but nccl")
       for name in ("test_all_gather_object_default_pg", "test_all_gather_object_subgroup",
                    "test_gather_object", "test_gather_object_subgroup",
                    "test_broadcast_object_list")},
    "test_get_future": (
        ("plexus",), "gated on mpi/nccl/gloo for Work.get_future(); plexus's Works have "
                     "futures, and the body is CPU-only but for nccl"),
    **{name: (("gloo", "plexus"), "gated on {'mpi'} ('Only MPI supports CPU all_to_all_single'); "
                                  "the CPU body fits any backend with all_to_all_single, as gloo "
                                  "and plexus are")
       for name in _ALL_TO_ALL_SINGLE_CPU},
    **{name: (("plexus",), "gated on {'mpi'} ('Only MPI supports all_to_all'); the CPU body fits "
                           "any backend with the list form of all_to_all, as plexus is (gloo "
                           "is not: 'ProcessGroup gloo does not support alltoall')")
       for name in _ALL_TO_ALL_LIST_CPU},
    **{name: (("plexus",), "gated on {'gloo'} ('GLOO Batch Send Recv CPU'); the body is an "
                           "all-pairs exchange of CPU tensors in one batch_isend_irecv, which "
                           "plexus runs as one group (startCoalescing); tags are consistent per "
                           "pair, so plexus's ignoring them changes nothing")
       for name in ("test_batch_isend_irecv_gloo", "test_batch_isend_irecv_gloo_tags")},
}

# The default list: every test of the suite that runs on a CPU-only machine over gloo or plexus
# (those that need CUDA, NCCL, MPI, 4 ranks or torchvision are left to --full, where they skip),
# skipped ones included so that the table shows the control's result. WORLD_SIZE 3 is the
# smallest that runs the "_group" variants (a group of ranks 1 and 2). Both backends together
# take 3-5 minutes on 2 cores.
DEFAULT_TESTS = [
    # process groups: rank, size, backend name, destroy
    "test_dump_DDP_relevant_env_vars", "test_get_rank", "test_get_backend",
    "test_Backend_enum_class", "test_destroy_group", "test_get_rank_size_group",
    "test_destroy_full_group", "test_get_rank_size_full_group",
    "test_barrier_timeout_group", "test_barrier_timeout_full_group",
    # point-to-point
    "test_batch_isend_irecv_gloo", "test_batch_isend_irecv_gloo_tags",
    "test_send_recv", "test_send_recv_autograd_profiler", "test_send_recv_torch_profiler",
    "test_send_recv_any_source", "test_send_recv_any_source_autograd_profiler",
    "test_send_recv_any_source_torch_profiler",
    "test_send_recv_with_tag", "test_send_recv_with_tag_autograd_profiler",
    "test_send_recv_with_tag_torch_profiler",
    "test_isend", "test_isend_autograd_profiler", "test_isend_torch_profiler", "test_irecv",
    # broadcast
    "test_broadcast", "test_broadcast_group", "test_broadcast_full_group",
    # reduce
    "test_reduce_sum", "test_reduce_product", "test_reduce_min", "test_reduce_max",
    "test_reduce_group_sum", "test_reduce_group_product", "test_reduce_group_min",
    "test_reduce_group_max", "test_reduce_full_group_sum", "test_reduce_full_group_product",
    "test_reduce_full_group_min", "test_reduce_full_group_max", "test_reduce_sum_twice",
    # all_reduce
    "test_all_reduce_sum", "test_all_reduce_sum_async", "test_all_reduce_sum_complex",
    "test_all_reduce_complex_unsupported_ops", "test_all_reduce_product", "test_all_reduce_min",
    "test_all_reduce_max", "test_all_reduce_group_sum", "test_all_reduce_group_product",
    "test_all_reduce_group_min", "test_all_reduce_group_max", "test_all_reduce_full_group_sum",
    "test_all_reduce_full_group_product", "test_all_reduce_full_group_min",
    "test_all_reduce_full_group_max", "test_sparse_all_reduce_sum",
    # all_reduce_coalesced
    "test_all_reduce_coalesced_max_complex_unsupported",
    *(f"test_all_reduce_coalesced_{v}" for v in _COALESCED),
    # scatter, gather
    "test_scatter_checks", "test_scatter", "test_scatter_complex", "test_scatter_group",
    "test_scatter_full_group", "test_gather_checks", "test_gather", "test_gather_group",
    "test_gather_full_group",
    # all_gather, all_gather_coalesced
    "test_all_gather", "test_all_gather_complex", "test_all_gather_group",
    "test_all_gather_full_group", "test_all_gather_coalesced_simple",
    "test_all_gather_coalesced_complex", "test_all_gather_coalesced_group",
    "test_all_gather_coalesced_full_group", "test_all_gather_coalesced_with_empty",
    # all_to_all_single (equal and uneven splits), all_to_all
    *_ALL_TO_ALL_SINGLE_CPU, *_ALL_TO_ALL_LIST_CPU,
    # barrier
    "test_barrier", "test_barrier_group", "test_barrier_full_group",
    # DistributedDataParallel on CPU, Work futures
    "test_DistributedDataParallelCPU", "test_DistributedDataParallelCPU_grad_is_view",
    "test_DistributedDataParallel_requires_grad", "test_ddp_create_graph",
    "test_accumulate_gradients_no_sync", "test_accumulate_gradients_no_sync_grad_is_view",
    "test_accumulate_gradients_no_sync_allreduce_hook",
    "test_accumulate_gradients_no_sync_allreduce_with_then_hook",
    "test_get_future", "test_ddp_logging_data_cpu", "test_static_graph_api_cpu",
    # object collectives
    "test_all_gather_object_default_pg", "test_all_gather_object_subgroup",
    "test_gather_object", "test_gather_object_subgroup", "test_broadcast_object_list",
    "test_scatter_object_list",
    # gloo's monitored_barrier (the control only)
    "test_monitored_barrier_gloo", "test_monitored_barrier_gloo_subgroup",
    "test_monitored_barrier_gloo_rank_0_timeout", "test_monitored_barrier_failure_order",
    "test_monitored_barrier_wait_all_ranks",
]


# ------------------------------------------------------------------------------------------------
# The per-backend child: runs the tests in this process (each in WORLD_SIZE rank processes made by
# the suite) and writes one JSON line per test to the results file.
# ------------------------------------------------------------------------------------------------

def _child_main(args):
    # torch.testing._internal.common_utils parses sys.argv when imported: give it none of ours.
    sys.argv = sys.argv[:1]
    import unittest

    import plexus_suite_module as suite

    backend = os.environ["BACKEND"]
    cls = (suite.TestDistBackendWithFork if args.start_method == "fork"
           else suite.TestDistBackendWithSpawn)
    base = suite.DistributedTest._DistTestBase
    for name, (backends, _) in LIFTED_GATES.items():
        func = base.__dict__.get(name)
        if backend in backends and func is not None:
            func.__unittest_skip__ = False
    skip_log = os.environ["PLEXUS_SUITE_SKIP_LOG"]

    with open(args.results, "a") as out:
        for name in args.tests:
            record = {"test": name, "backend": backend}
            start = time.time()
            if not hasattr(cls, name):
                record.update(outcome="error", detail="no such test in this torch's suite")
            elif backend == "plexus" and name in PLEXUS_SKIP and not args.run_skip_listed:
                record.update(outcome="skip", detail=PLEXUS_SKIP[name], listed=True)
            else:
                print(f"===== {backend} {name}", flush=True)
                open(skip_log, "w").close()
                result = unittest.TestResult()
                cls(name).run(result)
                if result.errors or result.failures:
                    outcome = "error" if result.errors else "fail"
                    detail = (result.errors or result.failures)[0][1]
                    print(detail, flush=True)
                elif result.skipped:
                    outcome, detail = "skip", result.skipped[0][1]
                    with open(skip_log) as f:
                        reasons = [line.rstrip("\n").split("\t", 1) for line in f]
                    reasons = [r[1] for r in reasons if len(r) == 2 and r[0] == name]
                    if reasons:
                        detail = reasons[0]
                elif result.expectedFailures or result.unexpectedSuccesses:
                    outcome, detail = "fail", "expected failure / unexpected success"
                else:
                    outcome, detail = "pass", ""
                record.update(outcome=outcome, detail=detail)
                if backend in LIFTED_GATES.get(name, ((),))[0]:
                    record["lifted"] = True
            record["seconds"] = round(time.time() - start, 2)
            out.write(json.dumps(record) + "\n")
            out.flush()
    return 0


# ------------------------------------------------------------------------------------------------
# The runner
# ------------------------------------------------------------------------------------------------

def _enumerate_child(args):
    """Child mode --enumerate: prints every test of _DistTestBase, in the suite's order (the
    parametrized ones under their instantiated names)."""
    sys.argv = sys.argv[:1]
    import plexus_suite_module as suite

    base = suite.DistributedTest._DistTestBase
    for name, value in vars(base).items():
        if name.startswith("test") and callable(value):
            print(name)
    return 0


def _all_suite_tests(args):
    env = _child_env("gloo", args, os.devnull)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--enumerate"],
                         env=env, capture_output=True, text=True, check=True)
    return [line.strip() for line in out.stdout.splitlines() if line.startswith("test")]


def _select_tests(args):
    if args.full:
        return _all_suite_tests(args)
    if not args.tests:
        return list(DEFAULT_TESTS)
    universe = None
    chosen = []
    for item in args.tests:
        for pattern in item.replace(",", " ").split():
            if any(c in pattern for c in "*?["):
                if universe is None:
                    universe = _all_suite_tests(args)
                chosen.extend(n for n in universe if fnmatch.fnmatchcase(n, pattern))
            else:
                chosen.append(pattern)
    return list(dict.fromkeys(chosen))


def _child_env(backend, args, skip_log):
    env = dict(os.environ)
    # Absolute: the child runs in the run's log folder.
    paths = [HERE] + [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    probe = subprocess.run([sys.executable, "-c", "import expecttest"], env=dict(
        env, PYTHONPATH=os.pathsep.join(paths)), capture_output=True)
    if probe.returncode != 0:
        paths.append(os.path.join(HERE, "shims"))
    env.update(
        PYTHONPATH=os.pathsep.join(paths),
        BACKEND=backend,
        WORLD_SIZE=str(args.world_size),
        TEMP_DIR=tempfile.gettempdir(),  # the suite makes its own per test
        PLEXUS_SUITE_SKIP_LOG=skip_log,
        DISTRIBUTED_TESTS_DEFAULT_TIMEOUT=str(args.test_timeout),
        OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"),
        PYTHONUNBUFFERED="1",
        PYTHONDONTWRITEBYTECODE="1",  # no __pycache__ in the source tree
    )
    return env


def _run_backend(backend, tests, args, workdir):
    """Runs the child for one backend; returns ({test: record}, seconds)."""
    results = os.path.join(workdir, f"{backend}.jsonl")
    log_path = os.path.join(workdir, f"{backend}.log")
    skip_log = os.path.join(workdir, f"{backend}.skips")
    open(results, "w").close()
    env = _child_env(backend, args, skip_log)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--results", results,
           "--start-method", args.start_method, "--tests", ",".join(tests)]
    if args.run_skip_listed:
        cmd.append("--run-skip-listed")
    start = time.time()
    records = {}
    seen = 0
    with open(log_path, "w") as log:
        # Its own session: the rank processes the suite starts share its process group, so one
        # killpg ends them all, whatever state a failed test left them in.
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=workdir)
        deadline = start + args.backend_timeout
        try:
            while True:
                done = proc.poll() is not None
                with open(results) as f:
                    lines = f.readlines()
                for line in lines[seen:]:
                    if not line.endswith("\n"):
                        break
                    rec = json.loads(line)
                    records[rec["test"]] = rec
                    seen += 1
                    if not args.quiet:
                        print(f"  [{backend:6}] {len(records):3}/{len(tests)} {rec['test']:55} "
                              f"{rec['outcome']:5} {rec['seconds']:6.1f} s", flush=True)
                if done:
                    break
                if time.time() > deadline:
                    print(f"  [{backend}] over --backend-timeout {args.backend_timeout} s: "
                          "stopping", flush=True)
                    break
                time.sleep(0.5)
        finally:
            # The child and anything left of its group (ranks of a timed-out test).
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
    if proc.returncode not in (0, None, -signal.SIGKILL) or (
            proc.returncode == -signal.SIGKILL and len(records) < len(tests)):
        print(f"  [{backend}] child exited with {proc.returncode}; log: {log_path}", flush=True)
    if len(records) < len(tests):
        with open(log_path, errors="replace") as f:
            tail = [l.rstrip() for l in f.readlines()[-40:] if l.strip()]
        errors = [l for l in tail if re.match(r"[A-Za-z_.]*(Error|Exception)\b", l.strip())]
        why = errors[-1].strip() if errors else (tail[-1] if tail else "no output")
        for name in tests:
            records.setdefault(name, {
                "test": name, "backend": backend, "outcome": "error", "seconds": 0,
                "detail": f"no result: the {backend} child ended ({why}); see {log_path}"})
    return records, time.time() - start


def _control_key(tests, args):
    """A digest of what the gloo control's results depend on, or None where torch's files are not
    found. Plexus is not among them: the control never loads it."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    torch_dir = spec.submodule_search_locations[0]
    files = [os.path.join(torch_dir, "version.py"),
             os.path.join(torch_dir, "testing", "_internal", "common_distributed.py"),
             os.path.join(torch_dir, "testing", "_internal", "common_utils.py"),
             os.path.join(torch_dir, "testing", "_internal", "distributed", "distributed_test.py"),
             os.path.abspath(__file__), os.path.join(HERE, "plexus_suite_module.py"),
             os.path.join(HERE, "shims", "expecttest.py")]
    digest = hashlib.sha256()
    for path in files:
        try:
            with open(path, "rb") as f:
                digest.update(path.encode() + b"\0" + f.read() + b"\0")
        except OSError:
            return None
    digest.update(json.dumps([sys.version, tests, args.world_size, args.start_method,
                              args.test_timeout, os.environ.get("OMP_NUM_THREADS", "1")]).encode())
    return digest.hexdigest()[:24]


def _control_cache_path(tests, args):
    folder = args.control_cache
    if folder is None:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = os.path.join(cache, "plexus", "torch-suite-control")
    if args.no_control_cache:
        return None
    key = _control_key(tests, args)
    return os.path.join(folder, f"gloo-{key}.json") if key else None


def _run_control(tests, args, workdir):
    """The gloo control: from the cache where it holds this key, else run (and kept when every
    test passed or skipped). Returns (records, seconds, cache path if read from it)."""
    path = _control_cache_path(tests, args)
    if path and os.path.exists(path):
        try:
            with open(path) as f:
                records = json.load(f)
            # Any file there is read as untrusted: used only if it is what _keep_control writes,
            # a record per test, each passed or skipped (otherwise the control runs).
            if isinstance(records, dict) and all(
                    isinstance(records.get(name), dict) and
                    records[name].get("outcome") in ("pass", "skip") for name in tests):
                return records, 0.0, path
        except (OSError, ValueError):
            pass
    records, seconds = _run_backend("gloo", tests, args, workdir)
    if path and all(records[name]["outcome"] in ("pass", "skip") for name in tests):
        _keep_control(path, records)
    return records, seconds, None


def _keep_control(path, records):
    """Writes the control's records to path through a temporary file of this process's own (other
    clones share the folder and may write the same key at once). The cache only saves time: a
    folder that cannot be written (a read-only or missing home) is reported, not fatal."""
    tmp = None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".gloo-", suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(records, f)
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        print(f"  [gloo  ] the control's results are not kept ({e})", flush=True)
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _cell(rec):
    if rec is None:
        return "-"
    if rec["outcome"] == "skip":
        return f"skip ({rec['detail']})"
    return rec["outcome"] + ("*" if rec.get("lifted") else "")


def _short_error(detail):
    """The lines of a failure that say what went wrong: which ranks failed, and their exceptions
    (the first line of each, without C++ frames)."""
    keep = []
    for line in detail.splitlines():
        text = line.strip()
        if (re.match(r"(Process \d+ |[A-Za-z_.]*(Error|Exception|Interrupt)\b)", text)
                and not text.startswith("Exception raised from")):
            keep.append(text)
    keep = list(dict.fromkeys(keep))
    return keep[:8] if keep else [l.strip() for l in detail.splitlines() if l.strip()][-3:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", action="append", default=[],
                        help="tests to run (comma-separated; fnmatch patterns such as "
                             "'test_all_to_all*'); repeatable")
    parser.add_argument("--full", action="store_true", help="every test of the suite")
    parser.add_argument("--list", action="store_true", help="print the list and policy, run none")
    parser.add_argument("--world-size", type=int, default=3, choices=(2, 3, 4))
    parser.add_argument("--backends", default="gloo,plexus",
                        help="comma-separated (default gloo,plexus; plexus alone runs no control)")
    parser.add_argument("--start-method", choices=("fork", "spawn"), default="fork",
                        help="how the suite starts the ranks: fork (default; fast) or spawn "
                             "(upstream's way: every rank imports torch and the suite anew)")
    parser.add_argument("--test-timeout", type=int, default=120,
                        help="seconds one test may run before the suite kills its ranks")
    parser.add_argument("--backend-timeout", type=int, default=1800,
                        help="seconds all tests of one backend may run")
    parser.add_argument("--run-skip-listed", action="store_true",
                        help="run the tests of the plexus skip list over plexus too (to see "
                             "that they still fail as the list says)")
    parser.add_argument("--keep-logs", metavar="DIR",
                        help="write the children's logs and results here (kept)")
    parser.add_argument("--quiet", action="store_true", help="no per-test progress lines")
    parser.add_argument("--control-cache", metavar="DIR",
                        help="keep and reuse the gloo control's results here (default: "
                             "~/.cache/plexus/torch-suite-control)")
    parser.add_argument("--no-control-cache", action="store_true",
                        help="run the gloo control even where its results are kept")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--results", help=argparse.SUPPRESS)
    parser.add_argument("--enumerate", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child and args.enumerate:
        return _enumerate_child(args)
    if args.child:
        args.tests = [t for t in ",".join(args.tests).split(",") if t]
        return _child_main(args)

    # A SIGTERM (ctest's timeout, a CI stop) unwinds like Ctrl-C, so the children are ended.
    # (The runner's own process only: the suite ends rank processes with SIGTERM.)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    tests = _select_tests(args)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if args.list:
        print("tests:\n  " + "\n  ".join(tests))
        print("plexus skip list:")
        for name, why in PLEXUS_SKIP.items():
            print(f"  {name}: {why}")
        print("gates lifted:")
        for name, (where, why) in LIFTED_GATES.items():
            print(f"  {name} ({', '.join(where)}): {why}")
        return 0

    workdir = args.keep_logs or tempfile.mkdtemp(prefix="plexus-dist-suite-")
    os.makedirs(workdir, exist_ok=True)
    print(f"torch distributed suite: {len(tests)} tests, WORLD_SIZE={args.world_size}, "
          f"start method {args.start_method}, backends {', '.join(backends)}; logs in {workdir}",
          flush=True)
    results, times, cached = {}, {}, {}
    for backend in backends:
        if backend == "gloo":
            results[backend], times[backend], cached[backend] = _run_control(tests, args,
                                                                             workdir)
            if cached[backend]:
                print(f"  [gloo  ] the control's results of an earlier run, kept in "
                      f"{cached[backend]} (--no-control-cache runs it)", flush=True)
        else:
            results[backend], times[backend] = _run_backend(backend, tests, args, workdir)

    # The table.
    rows = [[name] + [_cell(results[b].get(name)) for b in backends] for name in tests]
    widths = [min(max(len(r[i]) for r in rows + [["test"] + backends]), 64)
              for i in range(len(backends))]  # every column but the last
    print()
    for row in [["test"] + backends, None] + rows:
        if row is None:
            print("-" * (sum(widths) + 2 * len(widths) + 30))
            continue
        cells = [f"{c:{w}}" for c, w in zip(row[:-1], widths)] + [row[-1]]
        print("  ".join(cells))
    print("(* the suite's backend-name gate was lifted for this backend: see --list)")
    print()
    for backend in backends:
        counts = {o: sum(1 for r in results[backend].values() if r["outcome"] == o)
                  for o in ("pass", "fail", "error", "skip")}
        when = "kept from an earlier run" if cached.get(backend) else f"in {times[backend]:.0f} s"
        print(f"{backend}: {counts['pass']} passed, {counts['fail'] + counts['error']} failed, "
              f"{counts['skip']} skipped {when}")

    # Regressions: plexus fails where gloo passes.
    regressions = []
    target = "plexus" if "plexus" in backends else backends[-1]
    control = "gloo" if "gloo" in backends and target != "gloo" else None
    for name in tests:
        rec = results[target][name]
        if rec["outcome"] in ("fail", "error"):
            gloo_passed = control is not None and results[control][name]["outcome"] == "pass"
            if gloo_passed or control is None:
                regressions.append(name)
            print(f"\n{target} {rec['outcome']}: {name}"
                  + (" (gloo passes)" if gloo_passed else ""))
            for line in _short_error(rec.get("detail", "")):
                print(f"    {line[:300]}")
    if not args.keep_logs and not regressions:
        shutil.rmtree(workdir, ignore_errors=True)
    elif regressions:
        print(f"\nlogs: {workdir}")

    counts = {o: sum(1 for r in results[target].values() if r["outcome"] == o)
              for o in ("pass", "fail", "error", "skip")}
    print()
    print(f"{counts['pass']} passed, {counts['fail'] + counts['error']} failed, "
          f"{counts['skip']} skipped")
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
