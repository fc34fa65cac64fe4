#!/usr/bin/env python3
"""fault_suite.py - randomized faults against real Plexus jobs; each run is seeded.

Every scenario starts a real job through plexus-run (real processes, real rendezvous, real
transports), injects one fault at a random moment, and asserts what issue 19 asks of it:

  collective_kill   kill -9 of a random rank during allreduce/allgather traffic: the job ends
                    within its bound and some rank's error names the killed rank.
  collective_stop   SIGSTOP of a random rank: the others give up after PLEXUS_TIMEOUT_MS and
                    name it; the job ends within its bound.
  train_kill        kill -9 of a random rank of a training job with frequent sharded
                    checkpoints (so the kill falls as often in a save, the rename included, as in
                    a step): the job ends within its bound naming the rank, and a rerun of the
                    same command resumes from the newest complete checkpoint and finishes.
  train_stop        the same with SIGSTOP.
  rendezvous_junk   while a job starts, hundreds of connections to its rendezvous port send
                    random bytes, announce huge messages, or hold still (slow loris): the job
                    finishes normally.
  enospc            training whose checkpoint folder is a 192 KiB tmpfs in a private mount
                    namespace (root only; skipped otherwise): the job fails within its bound with
                    an error naming the lack of space, never a hang or a crash.

Usage: fault_suite.py --bin BUILD/bin [--runs N] [--seed S] [--scenarios a,b,...]
Each run picks one scenario and its random moments from random.Random(seed * 1000 + run); a
failure prints the seed, run and scenario, which reproduce it. Processes started here are ended
by their ids only; temporary folders and namespaces are removed. Exit status 0 iff every run
passed.
"""
import argparse
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

TIMEOUT_MS = 4000  # PLEXUS_TIMEOUT_MS of every job: SIGSTOP faults end through it


class Failure(Exception):
    pass


def rank_pids(launcher_pid):
    """{rank: pid} of the ranks plexus-run started (its children), from their environment."""
    ranks = {}
    try:
        children = open(f"/proc/{launcher_pid}/task/{launcher_pid}/children").read().split()
    except OSError:
        return ranks
    for pid in map(int, children):
        try:
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        for entry in env:
            if entry.startswith(b"PLEXUS_RANK="):
                ranks[int(entry.split(b"=", 1)[1])] = pid
    return ranks


class Job:
    """A plexus-run job whose output is collected; ended only by its own pids."""

    def __init__(self, args, env, cwd):
        self.proc = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.output = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.start = time.monotonic()

    def _read(self):
        for line in self.proc.stdout:
            self.output.append(line.decode(errors="replace"))

    def text(self):
        return "".join(self.output)

    def wait(self, bound_s):
        try:
            code = self.proc.wait(timeout=bound_s)
        except subprocess.TimeoutExpired:
            self.kill_all()
            raise Failure(f"job still running after {bound_s:.0f} s (a hang)\n" + self.tail())
        self.reader.join(timeout=5)
        return code, time.monotonic() - self.start

    def kill_all(self):
        for pid in rank_pids(self.proc.pid).values():
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        try:
            self.proc.kill()
        except ProcessLookupError:
            pass
        self.proc.wait()

    def tail(self, lines=30):
        return "".join(self.output[-lines:])


def base_env():
    env = dict(os.environ)
    env["PLEXUS_TIMEOUT_MS"] = str(TIMEOUT_MS)
    env["PLEXUS_COST_MODEL"] = "2.5,0.1,0.05"
    return env


def wait_for_ranks(job, n, bound_s=20):
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        ranks = rank_pids(job.proc.pid)
        if len(ranks) == n:
            return ranks
        if job.proc.poll() is not None:
            break
        time.sleep(0.02)
    raise Failure(f"the {n} ranks did not all start\n" + job.tail())


def inject(job, rng, n, sig, after_s):
    ranks = wait_for_ranks(job, n)
    victim = rng.randrange(n)
    time.sleep(after_s)
    if job.proc.poll() is not None:
        raise Failure(f"job ended before the fault at {after_s:.2f} s\n" + job.tail())
    os.kill(ranks[victim], sig)
    return victim, ranks[victim]


def expect_named(job, victim, code):
    text = job.text()
    if code == 0:
        raise Failure("job exited 0 after a fault\n" + job.tail())
    # A surviving rank's own line ("[r] ..."; not the launcher's, not the victim's) that names
    # the victim: "rank 2 lost", "with rank 2", "missing ranks: 0, 2", "ranks 2 joined but ...".
    naming = re.compile(rf"\branks?:? (?:\d+, )*{victim}\b")
    survivors_named = [line for line in text.splitlines()
                       if re.match(r"\[\d+\] ", line) and not line.startswith(f"[{victim}]")
                       and naming.search(line)]
    if not survivors_named:
        raise Failure(f"no surviving rank named rank {victim}\n" + job.tail())


def collective(bin_dir, rng, tmp, sig):
    n = rng.choice([2, 3, 4])
    collective_name = rng.choice(["allreduce", "allgather", "reduce_scatter"])
    args = [f"{bin_dir}/plexus-run", "-n", str(n), "--grace-seconds", "2",
            "--term-grace-seconds", "2", "--", f"{bin_dir}/plexus-bench", collective_name,
            "-b", "4K", "-e", "4M", "-f", "4", "-n", "100000", "-w", "1"]
    env = base_env()
    env["PLEXUS_FI_PROVIDER"] = rng.choice(["tcp", "shm"])
    job = Job(args, env, tmp)
    try:
        victim, pid = inject(job, rng, n, sig, rng.uniform(0.3, 2.0))
        bound = 30 + TIMEOUT_MS / 1000
        code, took = job.wait(bound)
        expect_named(job, victim, code)
        return f"{collective_name} n={n} {env['PLEXUS_FI_PROVIDER']}: rank {victim} " \
               f"{signal.Signals(sig).name}, ended in {took:.1f} s (exit {code})"
    finally:
        job.kill_all()  # a SIGSTOPped rank may outlive its launcher: end it by its pid


def write_corpus(path, rng):
    words = ["whale", "sea", "ship", "captain", "harpoon", "ocean", "white", "deck", "sail",
             "storm", "crew", "voyage", "Ishmael", "Ahab", "Queequeg", "Pequod", "call", "me"]
    with open(path, "w") as out:
        for _ in range(6000):
            out.write(" ".join(rng.choice(words) for _ in range(12)) + ".\n")


def train_args(bin_dir, n, corpus, ckpt_dir, steps):
    return [f"{bin_dir}/plexus-run", "-n", str(n), "--grace-seconds", "2",
            "--term-grace-seconds", "5", "--", f"{bin_dir}/plexus-train",
            "--placement", f"D{n}", "--data", corpus, "--n-layer", "2", "--n-embd", "32",
            "--n-head", "2", "--seq-len", "32", "--batch-size", str(4 * n), "--steps",
            str(steps), "--val-every", "0", "--log-every", "5", "--checkpoint", "",
            "--checkpoint-dir", ckpt_dir, "--save-every", "2"]


def complete_checkpoints(ckpt_dir):
    return sorted(name for name in os.listdir(ckpt_dir)
                  if name.startswith("step-") and ".tmp" not in name)


def train(bin_dir, rng, tmp, sig):
    n = rng.choice([2, 3])
    corpus = os.path.join(tmp, "corpus.txt")
    write_corpus(corpus, rng)
    ckpt_dir = os.path.join(tmp, "ckpt")
    steps = 400
    env = base_env()
    job = Job(train_args(bin_dir, n, corpus, ckpt_dir, steps), env, tmp)
    try:
        # Let at least one checkpoint complete, then strike at a random moment.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and job.proc.poll() is None:
            if os.path.isdir(ckpt_dir) and complete_checkpoints(ckpt_dir):
                break
            time.sleep(0.05)
        if not (os.path.isdir(ckpt_dir) and complete_checkpoints(ckpt_dir)):
            raise Failure("no checkpoint was completed before the fault\n" + job.tail())
        victim, pid = inject(job, rng, n, sig, rng.uniform(0.0, 1.5))
        code, took = job.wait(60 + TIMEOUT_MS / 1000)
        expect_named(job, victim, code)
    finally:
        job.kill_all()
    newest = complete_checkpoints(ckpt_dir)[-1]
    # The rerun resumes from the newest complete checkpoint (a damaged or partial one would be
    # refused or skipped with a message) and finishes a few steps later.
    resumed = int(newest.split("-")[1].split(".")[0])
    rerun = Job(train_args(bin_dir, n, corpus, ckpt_dir, steps)[:-2] + ["--save-every", "0"],
                env, tmp)
    # The same --steps, so the schedule is unchanged; stopped once it has trained a step.
    try:
        # Resumed, and trained a step since (a SIGTERM during set-up ends a rank at once).
        step_line = re.compile(r"\bstep +\d+/\d+ \|")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and rerun.proc.poll() is None:
            text = rerun.text()
            at = text.find("resumed from")
            if at >= 0 and step_line.search(text, at):
                break
            time.sleep(0.05)
        text = rerun.text().lower()
        if "resum" not in text:
            rerun.kill_all()
            raise Failure(f"the rerun did not resume (newest complete: {newest})\n" +
                          rerun.tail())
        # Ask it to stop (SIGTERM: save and exit 0), as a preemption would.
        rerun.proc.send_signal(signal.SIGTERM)
        code, _ = rerun.wait(60)
        if code != 0:
            raise Failure(f"the resumed run failed (exit {code})\n" + rerun.tail())
    finally:
        rerun.kill_all()
    return f"train n={n}: rank {victim} {signal.Signals(sig).name} after checkpoint(s), " \
           f"ended in {took:.1f} s; resumed from {newest} (step {resumed})"


def rendezvous_junk(bin_dir, rng, tmp):
    n = rng.choice([2, 3])
    port = free_port()
    # The listener stays open until every rank has joined: the last rank starts a second late,
    # so the junk meets the server while it admits the job.
    bench = (f"{bin_dir}/plexus-bench allreduce -b 1K -e 64K -f 4 -n 5 -w 1")
    args = [f"{bin_dir}/plexus-run", "-n", str(n), "--master-port", str(port), "--", "sh", "-c",
            f'if [ "$PLEXUS_RANK" = {n - 1} ]; then sleep 1; fi; exec {bench}']
    stop = threading.Event()
    held = []
    sent = [0]

    def flood():
        junk = random.Random(rng.random())
        deadline = time.monotonic() + 30
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=1)
            except OSError:
                time.sleep(0.01)
                continue
            kind = junk.randrange(4)
            try:
                if kind == 0:
                    s.sendall(bytes(junk.randrange(256) for _ in range(junk.randrange(1, 300))))
                elif kind == 1:  # a header announcing 64 MiB
                    s.sendall((2).to_bytes(4, "little") + (64 << 20).to_bytes(4, "little"))
                elif kind == 2 and len(held) < 80:  # slow loris: one byte, then silence
                    s.sendall(b"\x01")
                    held.append(s)
                    s = None
            except OSError:
                pass
            if s is not None:
                s.close()
            sent[0] += 1

    threads = [threading.Thread(target=flood, daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(rng.uniform(0.0, 0.3))
    job = Job(args, base_env(), tmp)
    try:
        code, took = job.wait(60)
    finally:
        stop.set()
        for t in threads:
            t.join()
        for s in held:
            s.close()
        job.kill_all()
    if code != 0:
        raise Failure(f"the job failed under {sent[0]} junk connections (exit {code})\n" +
                      job.tail())
    if sent[0] < 10:
        raise Failure(f"only {sent[0]} junk connections reached the rendezvous\n" + job.tail())
    return f"n={n}: finished in {took:.1f} s beside {sent[0]} junk connections"


def enospc(bin_dir, rng, tmp):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return "skipped: needs root and unshare for a private tmpfs"
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        return "skipped: unshare -m is not permitted here"
    n = 2
    corpus = os.path.join(tmp, "corpus.txt")
    write_corpus(corpus, rng)
    ckpt_dir = os.path.join(tmp, "small")
    os.makedirs(ckpt_dir)
    inner = train_args(bin_dir, n, corpus, ckpt_dir, 40)
    script = (f"mount --make-rprivate / && mount -t tmpfs -o size=192k tmpfs {ckpt_dir} && "
              "exec \"$@\"")
    job = Job(["unshare", "-m", "sh", "-c", script, "sh"] + inner, base_env(), tmp)
    try:
        code, took = job.wait(90)
    finally:
        job.kill_all()
    text = job.text()
    if code == 0:
        raise Failure("training into a 192 KiB folder succeeded?\n" + job.tail())
    if "No space left" not in text and "ENOSPC" not in text:
        raise Failure("the error does not name the lack of space\n" + job.tail())
    return f"failed in {took:.1f} s naming the lack of space (exit {code})"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SCENARIOS = {
    "collective_kill": lambda b, r, t: collective(b, r, t, signal.SIGKILL),
    "collective_stop": lambda b, r, t: collective(b, r, t, signal.SIGSTOP),
    "train_kill": lambda b, r, t: train(b, r, t, signal.SIGKILL),
    "train_stop": lambda b, r, t: train(b, r, t, signal.SIGSTOP),
    "rendezvous_junk": rendezvous_junk,
    "enospc": enospc,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, help="the build's bin folder")
    parser.add_argument("--runs", type=int, default=len(SCENARIOS))
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    opts = parser.parse_args()
    opts.bin = os.path.abspath(opts.bin)
    names = opts.scenarios.split(",")
    for name in names:
        if name not in SCENARIOS:
            parser.error(f"unknown scenario {name}; known: {', '.join(SCENARIOS)}")
    print(f"fault suite: seed {opts.seed}, {opts.runs} runs", flush=True)
    failures = 0
    for run in range(opts.runs):
        rng = random.Random(opts.seed * 1000 + run)
        # Every scenario in turn, so a run of len(SCENARIOS) covers each once.
        name = names[run % len(names)]
        tmp = tempfile.mkdtemp(prefix="plexus-faults-")
        started = time.monotonic()
        try:
            what = SCENARIOS[name](opts.bin, rng, tmp)
            print(f"run {run} {name}: ok ({what}) [{time.monotonic() - started:.1f} s]",
                  flush=True)
        except Failure as failure:
            failures += 1
            print(f"run {run} {name}: FAILED (reproduce: --seed {opts.seed} --runs {run + 1} "
                  f"--scenarios {opts.scenarios}): {failure}", flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"fault suite: {opts.runs - failures} of {opts.runs} runs passed (seed {opts.seed})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
