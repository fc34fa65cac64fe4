"""plexus_torch: Plexus as a torch.distributed backend.

    import torch.distributed as dist
    import plexus_torch                      # registers the backend "plexus"
    dist.init_process_group("plexus")        # under torchrun, mp.spawn, Slurm or MPI

or, changing one import line of a torch script (as with SageMaker's data-parallel library):

    import plexus_torch.distributed as dist
    dist.init_process_group()                # backend "plexus" preset

Every group (the world and each dist.new_group) gets its own Plexus communicator, bootstrapped
through the store torch hands the backend. CPU tensors of float32, float64, float16, bfloat16,
int8, uint8, int32, int64 and bool. See docs/pytorch.md.
"""
import atexit as _atexit

import torch.distributed as _dist

from . import _C

# A group still alive at exit was never given to destroy_process_group (an uncaught exception, or
# a script that just ends): it aborts then, instead of waiting for the other ranks to destroy
# theirs, so this process exits at once and its peers see it lost within about a second.
_atexit.register(_C._mark_interpreter_exiting)

ProcessGroupPlexus = _C.ProcessGroupPlexus
BACKEND_NAME = "plexus"


def _create_process_group(store, rank, world_size, timeout):
    """torch's backend creator: (PrefixStore of the group, group rank, group size, timedelta)."""
    return ProcessGroupPlexus(store, rank, world_size, timeout)


if BACKEND_NAME.upper() not in _dist.Backend._plugins:
    _dist.Backend.register_backend(BACKEND_NAME, _create_process_group)

__all__ = ["ProcessGroupPlexus", "BACKEND_NAME"]
