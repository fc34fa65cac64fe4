"""Runs tests/python/numpy_worker.py as 4 real ranks under a launcher and checks that every rank
reported "rank R: N checks passed" and that the launcher exited 0.

    numpy_binding_test.py plexus-run BUILD_DIR   # BUILD_DIR/bin/plexus-run -n 4 -- python3 ...
    numpy_binding_test.py mpirun BUILD_DIR       # mpirun -np 4 (Open MPI), a free port for the
                                                 # rendezvous passed as PLEXUS_MASTER_PORT
    numpy_binding_test.py torchrun BUILD_DIR     # BUILD_DIR/bin/plexus-torchrun --standalone
                                                 # --nproc_per_node 4 (RANK, MASTER_ADDR/PORT)

PYTHONPATH is BUILD_DIR/python, where the plexus_numpy target lays out the package. Exits 77
(ctest's SKIP_RETURN_CODE) only when mpirun, or torch for torchrun, is not installed.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

RANKS = 4
PYTHON = "/usr/bin/python3"  # Debian's interpreter, the one with python3-numpy
SKIP = 77
LIMIT_SECONDS = 240  # under the test's TIMEOUT 300, so that a hang still prints the output
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "numpy_worker.py")


def free_port():
    """A TCP port the kernel had free just now (bound to port 0, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command_for(launcher, build_dir, env):
    if launcher == "plexus-run":
        return [os.path.join(build_dir, "bin", "plexus-run"), "-n", str(RANKS), "--",
                PYTHON, WORKER]
    if launcher == "torchrun":
        if subprocess.run([PYTHON, "-c", "import torch.distributed.run"],
                          capture_output=True).returncode != 0:
            print(f"SKIPPED: {PYTHON} has no torch (Debian's python3-torch provides torchrun)")
            sys.exit(SKIP)
        # --standalone: the workers' MASTER_PORT is then free for Plexus's rendezvous (under the
        # default static rendezvous torchrun's agent listens there itself; docs/numpy.md).
        return [PYTHON, os.path.join(build_dir, "bin", "plexus-torchrun"), "--standalone",
                "--nproc_per_node", str(RANKS), WORKER]
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        print("SKIPPED: mpirun not found (Debian's openmpi-bin provides it)")
        sys.exit(SKIP)
    env["PLEXUS_MASTER_PORT"] = str(free_port())
    return [mpirun, "--oversubscribe", "--allow-run-as-root", "-np", str(RANKS),
            "-x", "PLEXUS_MASTER_PORT", "-x", "PYTHONPATH", PYTHON, WORKER]


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("plexus-run", "mpirun", "torchrun"):
        print(__doc__)
        return 2
    launcher, build_dir = sys.argv[1], os.path.abspath(sys.argv[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(build_dir, "python")
    command = command_for(launcher, build_dir, env)
    print("running:", " ".join(command), flush=True)
    start = time.monotonic()
    # A session of its own, so that a hang can be ended with every rank the launcher started.
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=LIMIT_SECONDS)
        code = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            output, _ = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
        code = f"none: killed after {LIMIT_SECONDS} s"
    seconds = time.monotonic() - start
    print(output)
    passed = {int(m.group(1)): int(m.group(2))
              for m in re.finditer(r"rank (\d+): (\d+) checks passed", output)}
    missing = [r for r in range(RANKS) if r not in passed]
    print(f"{launcher}: exit status {code}, {seconds:.1f} s; checks passed per rank: {passed}")
    if code != 0 or missing:
        print(f"FAILED: {launcher} exit status {code}; ranks without 'checks passed': {missing}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
