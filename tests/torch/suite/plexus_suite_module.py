"""torch's own distributed test suite (DistributedTest._DistTestBase) set up for one backend.

Importing this module, in that order:
  1. registers "plexus" with torch.distributed (import plexus_torch) when BACKEND=plexus;
  2. adds "plexus" to the DistTestCases.backend_feature sets it really belongs to, *before*
     distributed_test.py is imported (its skip decorators read those sets at import time);
  3. imports the suite and defines the test classes the runner uses.

The runner's per-backend child imports it, and so does every rank process: with the "spawn" start
method (torch's own test_distributed_spawn.py) each rank re-imports the module that defines the
test class, i.e. this one, so the registration happens in each of them; with "fork" they inherit
it. Reads BACKEND and WORLD_SIZE (and, through the suite, TEMP_DIR) from the environment.
"""
import logging
import os
import re

import torch
from torch.testing._internal.common_distributed import DistTestCases

BACKEND = os.environ["BACKEND"]

# The DistTestCases.backend_feature sets plexus belongs to. Not "gpu" / "cuda": the backend takes
# CPU tensors only. "plugin": registered through dist.Backend.register_backend. "ddp":
# DistributedDataParallel over CPU modules (broadcast, allreduce, allgather of CPU tensors).
# "subgroup": dist.new_subgroups / new_subgroups_by_enumeration (one communicator per group).
PLEXUS_FEATURES = ("plugin", "ddp", "subgroup")

if BACKEND == "plexus":
    import plexus_torch  # noqa: F401  registers the backend "plexus" in this process

    for _feature in PLEXUS_FEATURES:
        DistTestCases.backend_feature[_feature].add("plexus")

from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    DistributedTest,
    TestDistBackend,
)


def _replicated_tensor_importable():
    try:
        import torch.distributed._shard  # noqa: F401
    except Exception:  # noqa: BLE001 (any import-time failure)
        return False
    return True


# The suite's rank entry point (TestDistBackend._run) turns on DDP's ReplicatedTensor mode, in
# which DistributedDataParallel() imports torch.distributed._shard. With torch 1.13 on Python 3.11
# (Debian's) that import fails for every backend ("ValueError: mutable default <class
# 'TensorProperties'> for field tensor_properties is not allowed", a dataclass rule Python 3.11
# added), so every DDP test would error before any communication. Where the import fails, the
# switch is ignored and DDP runs in its default mode, the one DDP users get.
REPLICATED_TENSOR_DDP = _replicated_tensor_importable()
if not REPLICATED_TENSOR_DDP:
    import torch.nn.parallel._replicated_tensor_ddp_utils as _rt_utils

    _rt_utils._set_ddp_with_replicated_tensor = lambda value: None


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    """Each test starts WORLD_SIZE fresh interpreters (upstream's test_distributed_spawn.py)."""

    def setUp(self):
        super().setUp()
        self._spawn_processes()


class TestDistBackendWithFork(TestDistBackend, DistributedTest._DistTestBase):
    """Each test forks WORLD_SIZE rank processes from the runner's child, which has imported torch,
    the suite and the backend already: the same test bodies, without the 4-10 s it takes every
    spawned rank to import them again on a 2-core machine."""

    def setUp(self):
        super().setUp()
        self._start_processes(torch.multiprocessing.get_context("fork").Process)


class _SkipReasonLog(logging.Handler):
    """Appends the reason a rank process gives for skipping a test (the suite only passes the
    parent a generic exit code) to the file named by PLEXUS_SUITE_SKIP_LOG, one line per skip:
    "<test name>\t<reason>"."""

    _PATTERN = re.compile(r"skipping test (\S+) for following reason: (.*)", re.S)

    def __init__(self, path):
        super().__init__(logging.INFO)
        self.path = path

    def emit(self, record):
        match = self._PATTERN.search(record.getMessage())
        if not match:
            return
        reason = " ".join(match.group(2).split())
        try:
            with open(self.path, "a") as f:
                f.write(f"{match.group(1)}\t{reason}\n")
        except OSError:
            pass


if os.environ.get("PLEXUS_SUITE_SKIP_LOG"):
    _logger = logging.getLogger("torch.testing._internal.common_distributed")
    if not any(isinstance(h, _SkipReasonLog) for h in _logger.handlers):
        _logger.addHandler(_SkipReasonLog(os.environ["PLEXUS_SUITE_SKIP_LOG"]))
