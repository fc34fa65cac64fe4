// checkpoint_lock.h - one job per checkpoint folder. Two jobs given one --checkpoint-dir would
// resume from each other's checkpoints and save over each other, so the running job's rank 0
// holds an exclusive flock(2) on DIR/plexus.lock, a small JSON file naming the holder: its job
// id, host, pid, world size and start time. A second job is refused at start with an error
// naming the holder.
//
// The kernel drops a flock when its holder's process ends in any way (SIGKILL included), so a
// lock file left by a job that was killed is no obstacle: the next job takes the lock, reports
// the job that left it and replaces its contents. A clean release removes the file while still
// holding the lock. Taking it follows the usual lock-file protocol: open (O_CREAT), flock
// (LOCK_EX | LOCK_NB), then check that the locked file is still the one at the path (a holder
// releasing at that moment removes it), else try again.
//
// flock reaches other hosts on NFS (Linux maps it to NFS byte-range locks) and on Lustre and
// GPFS mounted with locking; a file system without locks gives a CheckpointError naming the OS
// error rather than running unprotected.
//
// The job id names the job's temporary folders too (sharded_checkpoint.h: step-N.tmp-<job>), so
// no job removes another's. Thread safety: none needed (rank 0's main thread).
#pragma once

#include <cstdint>
#include <string>

namespace plexus::engine {

// A job id for a checkpoint folder: 16 hex digits of `number` (rank 0 draws it with
// random_job_number() and the ranks share it).
std::string job_id(uint64_t number);
// 64 bits from the OS's random source (std::random_device).
uint64_t random_job_number();

class CheckpointFolderLock {
 public:
  // Takes the lock of `dir` (which must exist) for job `job` of `world_size` ranks. Throws
  // CheckpointError:
  //   "checkpoint folder 'DIR' is in use by job J (pid P on host H, N ranks, since T): ..."
  // or naming the lock file and the OS error.
  CheckpointFolderLock(const std::string& dir, const std::string& job, int world_size);
  // Removes the lock file (if it is still this lock's) and releases the lock.
  ~CheckpointFolderLock();
  CheckpointFolderLock(const CheckpointFolderLock&) = delete;
  CheckpointFolderLock& operator=(const CheckpointFolderLock&) = delete;

  const std::string& path() const { return path_; }
  // The holder a killed job left in the file, e.g. "job J (pid P on host H, 2 ranks, since
  // T)"; "" if the file was new or empty.
  const std::string& previous_holder() const { return previous_; }

 private:
  std::string path_;
  std::string previous_;
  int fd_ = -1;
};

// "DIR/plexus.lock".
std::string checkpoint_lock_path(const std::string& dir);

}  // namespace plexus::engine
