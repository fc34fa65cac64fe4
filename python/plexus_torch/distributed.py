"""torch.distributed with Plexus as the default backend: change one import line of a script,

    import plexus_torch.distributed as dist   # instead of: import torch.distributed as dist
    dist.init_process_group()                 # backend "plexus"

Everything else (all_reduce, new_group, DistributedDataParallel's process_group, ...) is
torch.distributed's own. init_process_group takes torch's arguments; the rank and world size,
when neither is given nor set as RANK/WORLD_SIZE, come from the launcher's environment as
libplexus reads it (PLEXUS_RANK, Open MPI's OMPI_COMM_WORLD_*, PMI_*, SLURM_PROCID/SLURM_NTASKS),
so that mpirun and srun can start a torch script without torchrun. The rendezvous of torch's
store is still MASTER_ADDR:MASTER_PORT (init_method "env://").
"""
import os

import torch.distributed as _torch_dist

from . import BACKEND_NAME

# Launcher variables for (rank, world size), in libplexus's order (include/plexus/plexus.h).
_LAUNCHER_VARIABLES = (
    ("RANK", "WORLD_SIZE"),
    ("PLEXUS_RANK", "PLEXUS_WORLD_SIZE"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI_RANK", "PMI_SIZE"),
    ("SLURM_PROCID", "SLURM_NTASKS"),
)


def _launcher_rank_and_size():
    """(rank, world size) from the first launcher that set both, or (None, None)."""
    for rank_name, size_name in _LAUNCHER_VARIABLES:
        rank, size = os.environ.get(rank_name), os.environ.get(size_name)
        if rank is None or size is None:
            continue
        try:
            return int(rank), int(size)
        except ValueError:
            raise ValueError(f"plexus_torch: {rank_name}={rank!r} and {size_name}={size!r} "
                             "must be integers") from None
    return None, None


def init_process_group(backend=BACKEND_NAME, init_method=None, timeout=None, world_size=-1,
                       rank=-1, store=None, group_name="", pg_options=None):
    """torch.distributed.init_process_group with backend "plexus" and the launcher's rank."""
    if store is None and rank == -1 and world_size == -1:
        found_rank, found_size = _launcher_rank_and_size()
        if found_rank is not None and "RANK" not in os.environ:
            rank, world_size = found_rank, found_size
    kwargs = dict(backend=backend, init_method=init_method, world_size=world_size, rank=rank,
                  store=store, group_name=group_name, pg_options=pg_options)
    if timeout is not None:
        kwargs["timeout"] = timeout
    return _torch_dist.init_process_group(**kwargs)


def __getattr__(name):
    return getattr(_torch_dist, name)


def __dir__():
    return sorted(set(globals()) | set(dir(_torch_dist)))
