"""perf/engine/engine_vs_torch.py on a small shape: it runs plexus-train and the PyTorch twin
(perf/engine/torch_gpt.py) and prints their figures, and the two train the same model: the same
loss after 8 steps, to 1e-5 relative (observed: about 1e-7), which a wrong init, batch,
schedule or optimizer setting in the twin would break at the first step (losses near 5.5 move by
1e-2 per step). Tokens/s are printed, never judged.

Run: /usr/bin/python3 tests/torch/engine_bench_test.py   (needs data/moby_dick.txt and the build)
"""
import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("PLEXUS_BUILD_DIR", os.path.join(ROOT, "build"))
DATA = os.path.join(ROOT, "data", "moby_dick.txt")


def have_torch():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


@unittest.skipUnless(have_torch(), "this python has no torch (run it with /usr/bin/python3)")
@unittest.skipUnless(os.path.exists(DATA), "data/moby_dick.txt missing (scripts/fetch-data.sh)")
class EngineVsTorchBench(unittest.TestCase):
    def test_both_columns_train_the_same_model(self):
        done = subprocess.run(
            [sys.executable, os.path.join(ROOT, "perf", "engine", "engine_vs_torch.py"),
             "--build-dir", BUILD, "--shapes", "L2C64H4T32B8", "--rounds", "1", "--steps", "8",
             "--skip", "2"],
            capture_output=True, text=True, timeout=600,
            env=dict(os.environ, PYTHON=sys.executable))
        print(done.stdout)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        losses = {m.group(1): float(m.group(2)) for m in re.finditer(
            r"L2C64H4T32B8 round 1 (plexus|torch) +[0-9]+ tok/s  loss at step 8 ([0-9.]+)",
            done.stdout)}
        self.assertEqual(set(losses), {"plexus", "torch"}, done.stdout)
        self.assertGreater(losses["plexus"], 1.0)
        self.assertLess(losses["plexus"], 5.6)
        self.assertLess(abs(losses["plexus"] - losses["torch"]) / losses["torch"], 1e-5)
        self.assertRegex(done.stdout, r"L2C64H4T32B8 +[0-9]+ +[0-9]+ .* [0-9.]+x")


if __name__ == "__main__":
    unittest.main()
