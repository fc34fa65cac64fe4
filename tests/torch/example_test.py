"""The PyTorch example (python/examples/gpt_ddp.py) trained over the plexus backend, started by
build/bin/plexus-torchrun (torchrun, working on Debian 12's Python 3.11), follows plexus-train's
loss curve: the same GPT, init, batches and schedule over 4 ranks, each logged loss within 2e-3
of the engine's (float rounding differs; their curves agree to about 1e-4), falling from ~5.5.

Run: /usr/bin/python3 tests/torch/example_test.py   (needs data/moby_dick.txt and the build)
"""
import os
import re
import socket
import subprocess
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("PLEXUS_BUILD_DIR", os.path.join(ROOT, "build"))
DATA = os.path.join(ROOT, "data", "moby_dick.txt")
STEPS = 30
LINE = re.compile(r"step\s+(\d+)/\d+ \| loss ([0-9.]+)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def losses(command, env=None):
    """{step: loss} from the log lines of `command` (which must exit 0 within 240 s)."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, env=env)
    if done.returncode != 0:
        raise AssertionError(f"{command[0]} exited {done.returncode}:\n{done.stdout[-3000:]}\n"
                             f"{done.stderr[-3000:]}")
    found = {int(m.group(1)): float(m.group(2)) for m in LINE.finditer(done.stdout)}
    if not found:
        raise AssertionError(f"no loss lines in:\n{done.stdout[-3000:]}")
    return found


@unittest.skipUnless(os.path.exists(DATA), "data/moby_dick.txt missing (scripts/fetch-data.sh)")
class GptExample(unittest.TestCase):
    def test_torch_ddp_over_plexus_follows_plexus_train(self):
        env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"),
                   PLEXUS_BUILD_DIR=BUILD)
        torch_run = losses([os.path.join(BUILD, "bin", "plexus-torchrun"), "--nproc_per_node", "4",
                            "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
                            os.path.join(ROOT, "python", "examples", "gpt_ddp.py"),
                            "--backend", "plexus", "--steps", str(STEPS), "--data", DATA], env)
        engine = losses([os.path.join(BUILD, "bin", "plexus-run"), "-n", "4", "--",
                         os.path.join(BUILD, "bin", "plexus-train"), "--placement", "D4",
                         "--data", DATA, "--steps", str(STEPS), "--checkpoint", ""])
        common = sorted(set(torch_run) & set(engine))
        self.assertIn(1, common)
        self.assertIn(STEPS, common)
        for step in common:
            self.assertAlmostEqual(torch_run[step], engine[step], delta=2e-3,
                                   msg=f"step {step}: torch {torch_run[step]} vs engine "
                                       f"{engine[step]}")
        self.assertGreater(torch_run[1], 5.0)  # ln 256 = 5.55 at the start
        self.assertLess(torch_run[STEPS], torch_run[1] - 2.0)


if __name__ == "__main__":
    unittest.main()
