"""torch_world: runs a function on every rank of a real torch.distributed world of processes.

    results = run_world(fn, world_size=4, backend="plexus", timeout_s=120, args=(...))

starts `world_size` processes (multiprocessing "spawn": fresh interpreters, as torchrun gives),
each with MASTER_ADDR=127.0.0.1 and a free MASTER_PORT, calls
dist.init_process_group(backend, rank, world_size) there, then fn(rank, world_size, *args), and
returns the list of what each rank's fn returned (it must pickle). A rank that raises makes
run_world raise WorldError with every rank's traceback; a world still running after timeout_s is
killed (each child by its pid) and reported, as is a rank that does not exit by itself once it
has returned. No process outlives the call.
"""
import multiprocessing
import os
import socket
import sys
import time
import traceback

BUILD_PYTHON = os.environ.get(
    "PLEXUS_PYTHON_DIR",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "python"))


class WorldError(RuntimeError):
    pass


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(fn, rank, world_size, backend, port, args, queue):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank))
    try:
        import torch
        import torch.distributed as dist
        torch.set_num_threads(1)
        if BUILD_PYTHON not in sys.path:
            sys.path.insert(0, BUILD_PYTHON)
        import plexus_torch  # noqa: F401  registers "plexus"
        dist.init_process_group(backend, rank=rank, world_size=world_size)
        result = fn(rank, world_size, *args)
        dist.destroy_process_group()
        queue.put((rank, True, result))
    except BaseException:  # report everything, then exit non-zero
        queue.put((rank, False, traceback.format_exc()))
        sys.exit(1)


def run_world(fn, world_size=4, backend="plexus", timeout_s=180, args=(), may_die=()):
    """may_die: ranks allowed to end without a result (a test that kills them); their entry in
    the returned list is None."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    port = free_port()
    procs = [context.Process(target=_rank_main,
                             args=(fn, rank, world_size, backend, port, args, queue))
             for rank in range(world_size)]
    for p in procs:
        p.start()
    results, failures = {}, {}
    deadline = time.monotonic() + timeout_s
    try:
        while len(results) + len(failures) < world_size:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                rank, ok, value = queue.get(timeout=min(remaining, 1.0))
            except Exception:  # queue.Empty: see whether a rank died without a word
                dead = [i for i, p in enumerate(procs)
                        if p.exitcode not in (None, 0) and i not in results and i not in failures]
                for i in dead:
                    time.sleep(0.5)  # its message may still be in the pipe
                    failures.setdefault(i, f"rank {i} exited with code {procs[i].exitcode}")
                continue
            (results if ok else failures)[rank] = value
    finally:
        exit_deadline = min(deadline, time.monotonic() + 30.0)  # to exit after returning
        for p in procs:
            p.join(timeout=max(1.0, exit_deadline - time.monotonic()) if not failures else 5.0)
        for i, p in enumerate(procs):
            if p.is_alive():
                p.kill()
                p.join()
                if i in results:
                    del results[i]
                    failures[i] = f"rank {i} returned but did not exit by itself (killed)"
    for r in may_die:
        if r not in results and procs[r].exitcode not in (None, 0):
            failures.pop(r, None)
            results[r] = None
    missing = [r for r in range(world_size) if r not in results and r not in failures]
    if failures or missing:
        text = "".join(f"\n--- rank {r} ---\n{failures[r]}" for r in sorted(failures))
        if missing:
            text += f"\nranks {missing} did not finish within {timeout_s} s"
        raise WorldError(f"{backend} world of {world_size} failed:{text}")
    return [results[r] for r in range(world_size)]
