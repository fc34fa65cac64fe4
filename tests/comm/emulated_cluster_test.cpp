// emulated_cluster_test.cpp - the hierarchical collectives on emulated clusters: network
// namespaces as hosts (scripts/emulated-cluster.sh), real ranks, libfabric's tcp provider on each
// host's veth, PLEXUS_ALGO forcing every hierarchical algorithm. emulated_cluster_driver checks
// each result on every rank against the closed forms of collective_reference.h.
//
// Layouts 2x2, 2x3 and 3x2 (hosts x ranks), an uneven 3 + 2 and 2x2 over 2 rails (each host's
// ranks spread over its two links, both carrying traffic), unshaped links so each runs in
// seconds; the hosts' ranks share a peer-memory segment each (the namespaces share /dev/shm), so
// the intra-host phases run through it, and once more with PLEXUS_SHM=0 over the rings; the script's own contract (exit status of the first failing rank, timeout, SIGTERM,
// nothing left behind) is checked too. Every test skips when the script exits 77: this machine
// does not let it create namespaces.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

namespace fs = std::filesystem;

constexpr int kSkip = 77;  // the script cannot create namespaces here

// Every hierarchical algorithm, pipelined in 16 KiB slices so 65537 elements take many steps;
// a fixed cost model (the algorithms are forced, so nothing needs measuring).
const std::vector<std::string> kEnv = {
    "PLEXUS_ALGO=allreduce:hierarchical,reduce:hierarchical,broadcast:hierarchical,"
    "reduce_scatter:hierarchical,allgather:hierarchical",
    "PLEXUS_CHUNK_BYTES=16384", "PLEXUS_COST_MODEL=2.5,0.1,0.05,25,4",
    "PLEXUS_TIMEOUT_MS=60000"};

std::vector<std::string> script(const std::string& ranks_per_host, int hosts,
                                const std::vector<std::string>& command) {
  std::vector<std::string> argv = {EMULATED_CLUSTER_SCRIPT, "--ranks-per-host", ranks_per_host,
                                   "--rate", "0", "--timeout", "120"};
  if (hosts > 0) argv.insert(argv.end(), {"--hosts", std::to_string(hosts)});
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

// The run's namespace prefix ("plx<pid>"), read from the script's first message.
std::string run_prefix(const std::string& err) {
  std::smatch m;
  return std::regex_search(err, m, std::regex("namespaces (plx[0-9]+)h0")) ? m[1].str() : "";
}

// Names in /var/run/netns (ip netns list) that start with prefix.
std::vector<std::string> namespaces_left(const std::string& prefix) {
  std::vector<std::string> left;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/var/run/netns", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0) left.push_back(name);
  }
  return left;
}

void expect_cleaned_up(const ProcessResult& r) {
  const std::string prefix = run_prefix(r.err);
  ASSERT_FALSE(prefix.empty()) << "no namespace names in the script's messages:\n" << r.err;
  EXPECT_TRUE(namespaces_left(prefix).empty()) << prefix << "* left behind";
}

// Runs the driver on the layout (kEnv plus `extra`); every rank must report all its calls
// passed.
void run_layout(const std::string& ranks_per_host, int hosts, int world,
                const std::vector<std::string>& extra = {}) {
  std::vector<std::string> env = kEnv;
  env.insert(env.end(), extra.begin(), extra.end());
  ProcessResult r =
      run_process(script(ranks_per_host, hosts, {EMULATED_CLUSTER_DRIVER}), 180, env);
  if (r.exited && r.exit_code == kSkip) GTEST_SKIP() << r.err;
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (int rank = 0; rank < world; ++rank) {
    EXPECT_NE(r.out.find("[" + std::to_string(rank) + "] rank " + std::to_string(rank) +
                         ": 20 calls passed"),
              std::string::npos)
        << "rank " << rank << ":\n" << r.out << r.err;
  }
  expect_cleaned_up(r);
}

TEST(EmulatedCluster, TwoHostsOfTwoRanks) { run_layout("2", 2, 4); }
TEST(EmulatedCluster, TwoHostsOfThreeRanks) { run_layout("3", 2, 6); }
TEST(EmulatedCluster, ThreeHostsOfTwoRanks) { run_layout("2", 3, 6); }
TEST(EmulatedCluster, UnevenHostsThreeAndTwo) { run_layout("3,2", 0, 5); }
TEST(EmulatedCluster, UnevenHostsWithoutPeerMemory) {
  run_layout("3,2", 0, 5, {"PLEXUS_SHM=0"});
}

// Two rails (--rails 2: eth0 and eth1 per host, one network each): the ranks of each host are
// spread over both (PLEXUS_FI_NICS, nic_select.h), every result is right, and each host's two
// links both carry the traffic (the kernel's byte counters the script prints).
TEST(EmulatedCluster, TwoHostsOfTwoRanksUseBothRails) {
  std::vector<std::string> argv = script("2", 2, {EMULATED_CLUSTER_DRIVER});
  argv.insert(argv.begin() + 1, {"--rails", "2"});
  std::vector<std::string> env = kEnv;
  env.push_back("PLEXUS_DEBUG=INFO");
  ProcessResult r = run_process(argv, 180, env);
  if (r.exited && r.exit_code == kSkip) GTEST_SKIP() << r.err;
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string log = r.out + r.err;
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_NE(r.out.find("[" + std::to_string(rank) + "] rank " + std::to_string(rank) +
                         ": 20 calls passed"),
              std::string::npos)
        << log;
    // Local rank 0 of each host on eth0, local rank 1 on eth1.
    EXPECT_NE(log.find("rank " + std::to_string(rank) + ": NIC eth" + std::to_string(rank % 2) +
                       " "),
              std::string::npos)
        << "rank " << rank << ":\n" << log;
  }
  const std::regex rail("host ([01]) rail ([01]) \\(eth[01]\\): tx ([0-9]+) bytes");
  int rails_seen = 0;
  for (std::sregex_iterator it(r.err.begin(), r.err.end(), rail), end; it != end; ++it) {
    ++rails_seen;
    EXPECT_GT(std::stoull((*it)[3].str()), 1000000ull)
        << "host " << (*it)[1] << " rail " << (*it)[2] << " carried almost nothing:\n" << r.err;
  }
  EXPECT_EQ(rails_seen, 4) << r.err;
  expect_cleaned_up(r);
}

// A PLEXUS_FI_NICS that names no NIC of the provider fails communicator creation, naming the
// variable and what the provider offers.
TEST(EmulatedCluster, NicsNamingNoNicAreRefused) {
  std::vector<std::string> env = kEnv;
  env.push_back("PLEXUS_FI_NICS=eth7,eth8");
  ProcessResult r = run_process(script("1", 2, {EMULATED_CLUSTER_DRIVER}), 120, env);
  if (r.exited && r.exit_code == kSkip) GTEST_SKIP() << r.err;
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("PLEXUS_FI_NICS=eth7,eth8 names no NIC of the provider (it "
                                 "offers: eth0"),
            std::string::npos)
      << r.out << r.err;
  expect_cleaned_up(r);
}

// The launcher variables each rank gets, and the host it runs in (its own veth address).
TEST(EmulatedClusterScript, GivesEachRankItsHostAndRank) {
  ProcessResult r = run_process(
      script("2", 2,
             {"sh", "-c",
              "echo \"rank=$PLEXUS_RANK/$PLEXUS_WORLD_SIZE local=$PLEXUS_LOCAL_RANK/"
              "$PLEXUS_LOCAL_WORLD_SIZE host=$PLEXUS_HOST_ID master=$PLEXUS_MASTER_ADDR "
              "iface=$FI_TCP_IFACE provider=$PLEXUS_FI_PROVIDER\"; "
              "ip -4 -o addr show dev eth0 | grep -o '198\\.18\\.0\\.[0-9]*/24'"}),
      60);
  if (r.exited && r.exit_code == kSkip) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (int rank = 0; rank < 4; ++rank) {
    const std::string p = "[" + std::to_string(rank) + "] ";
    EXPECT_NE(r.out.find(p + "rank=" + std::to_string(rank) + "/4 local=" +
                         std::to_string(rank % 2) + "/2 host=host" + std::to_string(rank / 2) +
                         " master=198.18.0.1 iface=eth0 provider=tcp"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find(p + "198.18.0." + std::to_string(rank / 2 + 1) + "/24"),
              std::string::npos)
        << r.out;
  }
  expect_cleaned_up(r);
}

TEST(EmulatedClusterScript, ExitsWithTheFailingRanksStatus) {
  ProcessResult r =
      run_process(script("1", 3, {"sh", "-c", "[ \"$PLEXUS_RANK\" != 2 ] || exit 7"}), 60);
  if (r.exited && r.exit_code == kSkip) GTEST_SKIP() << r.err;
  EXPECT_EQ(r.exit_code, 7) << r.out << r.err;
  EXPECT_NE(r.err.find("rank 2 exited with status 7"), std::string::npos) << r.err;
  expect_cleaned_up(r);
}

TEST(EmulatedClusterScript, TimeoutKillsTheRanks) {
  std::vector<std::string> argv = script("2", 2, {"sleep", "60"});
  *(std::find(argv.begin(), argv.end(), "--timeout") + 1) = "1";
  ProcessResult r = run_process(argv, 50);
  if (r.exited && r.exit_code == kSkip) GTEST_SKIP() << r.err;
  EXPECT_EQ(r.exit_code, 124) << r.out << r.err;
  EXPECT_NE(r.err.find("timeout after 1 s"), std::string::npos) << r.err;
  expect_cleaned_up(r);
}

// Bad numbers are usage errors (2, never the 77 of "cannot emulate"), found before anything is
// created: out of range, too long for shell arithmetic, or with a leading zero read as octal.
TEST(EmulatedClusterScript, BadNumbersAreUsageErrors) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"--rate", "99999999999999999999gbit"}, {"--rate", "9999999999gbit"},
      {"--rate", "1001gbit"}, {"--timeout", "9999999999999999999"}, {"--timeout", "86401"},
      {"--hosts", "0099999999999999999999"}, {"--ranks-per-host", "65"},
      {"--ranks-per-host", "3,,2"}};
  for (const auto& [option, value] : bad) {
    std::vector<std::string> argv = script("1", 1, {"true"});  // the last of an option wins
    argv.insert(std::find(argv.begin(), argv.end(), "--"), {option, value});
    ProcessResult r = run_process(argv, 30);
    EXPECT_EQ(r.exit_code, 2) << option << " " << value << "\n" << r.err;
    EXPECT_NE(r.err.find(option + " '" + value + "'"), std::string::npos) << r.err;
  }
  // A leading zero is decimal, not octal: 08 ranks per host is 8, checked without a shell error.
  ProcessResult r = run_process(script("08", 1, {"true"}), 30);
  EXPECT_EQ(r.err.find("value too great for base"), std::string::npos) << r.err;
  // Each value in range, but together a tbf burst past tc's 32 bits.
  std::vector<std::string> argv = script("1", 1, {"true"});
  argv.insert(std::find(argv.begin(), argv.end(), "--"),
              {"--rate", "35gbit", "--burst-us", "1000000"});
  r = run_process(argv, 30);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--burst-us 1000000 at --rate 35gbit makes a tbf burst of 4375000000 "
                       "bytes, above tc's 4294967295"),
            std::string::npos)
      << r.err;
}

TEST(EmulatedClusterScript, SigtermStopsTheRanksAndRemovesTheCluster) {
  Subprocess p(script("2", 2, {"sh", "-c", "echo started; exec sleep 60"}));
  const bool started = p.wait_for_stdout("started", 4, 30);
  ::kill(p.pid(), SIGTERM);
  ProcessResult r = p.wait(30);
  if (r.exited && r.exit_code == kSkip) GTEST_SKIP() << r.err;
  ASSERT_TRUE(started) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 143) << r.out << r.err;
  expect_cleaned_up(r);
}

}  // namespace
}  // namespace plexus::test
