// communicator.cpp - creating, destroying and aborting a communicator.
//
// Creation, in order:
//   1. connect to the rendezvous server; round 0 gathers every rank's host id;
//   2. local rank/size from the host ids (unless the launcher gave them), transport choice
//      (PLEXUS_TRANSPORT: libfabric with its provider choice, or UCX);
//   3. open the endpoint; round 1 gathers "settings\0nic\0address" from every rank;
//   4. insert the addresses;
//   5. the host layout (hosts in order of first rank, local ranks, rails) from the host ids, and
//      the cost model's parameters: rank 0's cached or measured ones (both levels when the ranks
//      span hosts), shared with every rank; round 2 waits for all, then the rendezvous
//      connection goes to its liveness watcher;
//   6. before round 2, the peer-memory segment when every rank is on this host
//      (communicator_peers.cpp).
// Split communicators are made in communicator_split.cpp.
#include "comm/core/communicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "comm/base/config.h"
#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/core/pinning.h"
#include "comm/core/run_task.h"
#include "comm/transport/ofi/ofi_transport.h"
#include "comm/transport/ofi/provider_select.h"
#include "comm/transport/ucx/ucx_transport.h"
#include "comm/tuning/cost_cache.h"
#include "topology/host.h"

namespace plexus::comm {

namespace {

using bootstrap::Bytes;

Bytes to_bytes(const std::string& text) { return Bytes(text.begin(), text.end()); }

// "host id\n1" (shm self-test passed) or "host id\n0" for round 0.
Bytes host_record(const std::string& host, bool shm_ok) {
  return to_bytes(host + (shm_ok ? "\n1" : "\n0"));
}
std::string record_host(const Bytes& record) {
  std::string text(record.begin(), record.end());
  return text.substr(0, text.rfind('\n'));
}
bool record_shm_ok(const Bytes& record) { return !record.empty() && record.back() == '1'; }

// Round 1's record, "<provider settings>\0<nic>\0<address>": the NIC (Transport::nic(), no zero byte in it) lets
// every rank count the NICs each host's ranks send on (cost_shape.h nics_in_use). Every rank
// parses the same table of records, so all derive the same links per host.
Bytes endpoint_record(const std::string& provider, const std::string& nic,
                      const std::vector<uint8_t>& address) {
  Bytes record = to_bytes(provider);
  record.push_back(0);
  const Bytes nic_bytes = to_bytes(nic.substr(0, nic.find('\0')));
  record.insert(record.end(), nic_bytes.begin(), nic_bytes.end());
  record.push_back(0);
  record.insert(record.end(), address.begin(), address.end());
  return record;
}

plx_result_t parse_endpoint_records(int rank, const std::vector<Bytes>& records,
                                    const std::string& my_provider,
                                    std::vector<std::vector<uint8_t>>* addresses,
                                    std::vector<std::string>* nics) {
  addresses->clear();
  nics->clear();
  for (size_t r = 0; r < records.size(); ++r) {
    const Bytes& record = records[r];
    auto zero = std::find(record.begin(), record.end(), uint8_t{0});
    auto second = zero == record.end() ? zero : std::find(zero + 1, record.end(), uint8_t{0});
    if (second == record.end()) {
      return set_error(PLX_ERROR_INTERNAL,
                       fmt::format("rank {}: malformed endpoint record from rank {}", rank, r));
    }
    const std::string provider(record.begin(), zero);
    if (provider != my_provider) {
      return set_error(PLX_ERROR_INVALID_USAGE,
                       fmt::format("rank {}: ranks disagree on transport settings: rank {} has "
                                   "'{}', rank {} has '{}' (set PLEXUS_FI_PROVIDER, "
                                   "PLEXUS_CHUNK_BYTES, PLEXUS_FI_MAX_MSG_BYTES, "
                                   "FI_OFI_RXM_BUFFER_SIZE, FI_OFI_RXM_EAGER_LIMIT and "
                                   "PLEXUS_HIERARCHICAL_LANES alike on every rank; eager_bytes "
                                   "0 is a value neither could give)",
                                   rank, rank, my_provider, r, provider));
    }
    nics->emplace_back(zero + 1, second);
    addresses->emplace_back(second + 1, record.end());
  }
  return PLX_SUCCESS;
}

// The steps after connecting to the rendezvous (numbered as in communicator.h).
plx_result_t set_up(plx_comm* comm, CommSetup& setup);

}  // namespace

plx_result_t create_communicator(CommSetup setup, plx_comm** out) {
  auto comm = std::make_unique<plx_comm>();
  comm->rank = setup.rank;
  comm->size = setup.nranks;
  refresh_log_level();
  set_log_rank(setup.rank);
  report_unknown_settings();
  comm->async = std::make_shared<AsyncState>();
  comm->server = std::move(setup.server);
  // Connect first, before anything here can fail: a rank that then fails (a bad setting, a
  // transport that will not open) tells every other rank why at once through the root, rather
  // than leaving them to wait out PLEXUS_TIMEOUT_MS. A malformed PLEXUS_TIMEOUT_MS itself is
  // reported by set_up(); the connection meanwhile uses the default.
  comm->timeout_ms = 300000;
  if (config_timeout_ms(&comm->timeout_ms) != PLX_SUCCESS) clear_error();
  comm->world_rank = setup.rank;
  if (setup.address.port != 0) {
    std::unique_ptr<bootstrap::RendezvousClient> client;
    if (plx_result_t rc = bootstrap::RendezvousClient::connect(
            setup.address, setup.rank, setup.nranks, comm->timeout_ms, comm->async, &client);
        rc != PLX_SUCCESS) {
      if (setup.deferred_error.empty()) return rc;
      // This rank's own bad setting is the news, not that it could not report it.
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("rank {}: {} (and it could not reach the rendezvous to tell "
                                   "the others: {})",
                                   setup.rank, setup.deferred_error, last_error()));
    }
    comm->rendezvous = std::move(client);
    comm->liveness = comm->rendezvous;
  }
  if (plx_result_t failure = set_up(comm.get(), setup); failure != PLX_SUCCESS) {
    std::string why = last_error();
    if (comm->rendezvous) {
      // A transport that fails to reach a peer is often the first sign of that peer's own
      // failure: give the rendezvous a moment to say so, since that is the actionable news.
      const bool maybe_a_peer = failure == PLX_ERROR_TRANSPORT || failure == PLX_ERROR_SYSTEM ||
                                failure == PLX_ERROR_INTERNAL || failure == PLX_ERROR_TIMEOUT;
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      while (maybe_a_peer && comm->async->error() == PLX_SUCCESS &&
             std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      if (maybe_a_peer && comm->async->error() != PLX_SUCCESS &&
          failure != comm->async->error()) {
        why = fmt::format("rank {}: {} ({})", setup.rank, comm->async->message(), why);
        failure = comm->async->error();
      } else {
        comm->rendezvous->abort_now("failed while creating its communicator: " + why);
        // The root's own failure: its server must deliver the reason to the others, those
        // still to connect included, before this communicator (and the server with it) is
        // destroyed on return; at most 5 s, the bound promised for the others.
        if (comm->server) {
          comm->server->wait_failure_sent(std::chrono::steady_clock::now() +
                                          std::chrono::seconds(5));
        }
      }
    }
    return set_error(failure, why);
  }
  *out = comm.release();
  return PLX_SUCCESS;
}

namespace {

plx_result_t set_up(plx_comm* comm, CommSetup& setup) {
  if (!setup.deferred_error.empty()) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("rank {}: {}", setup.rank, setup.deferred_error));
  }
  PLX_CHECK(config_timeout_ms(&comm->timeout_ms));
  PLX_CHECK(config_chunk_bytes(&comm->chunk_bytes));
  std::optional<size_t> max_msg_bytes;
  PLX_CHECK(config_bytes("PLEXUS_FI_MAX_MSG_BYTES", 0, SIZE_MAX, &max_msg_bytes));
  LaneSchedule lanes = LaneSchedule::Auto;
  PLX_CHECK(lane_schedule_from_env(setup.rank, &lanes));
  {  // read by the libfabric transport; a bad value fails every transport alike
    std::optional<int64_t> fi_hmem;
    if (config_integer("PLEXUS_FI_HMEM", 0, 2, &fi_hmem) != PLX_SUCCESS) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("rank {}: {}", setup.rank, last_error()));
    }
  }

  // 1. Rendezvous round 0: host ids, and whether shm passed its self-test in this process, so
  // that every rank reaches the same provider choice (one rank failing the test, say on a busy
  // /dev/shm, moves all of them to tcp instead of splitting the job).
  const std::string my_host = topology::host_id();
  std::string ignored_why;
  const bool shm_ok_here =
      !config_string("PLEXUS_FI_PROVIDER").has_value() && ofi::shm_works(&ignored_why);
  std::vector<Bytes> records{host_record(my_host, shm_ok_here)};
  const bool rendezvous = comm->rendezvous != nullptr;
  if (rendezvous) {
    PLX_CHECK(comm->rendezvous->allgather(0, host_record(my_host, shm_ok_here), &records));
  }

  // 2. Local rank and size, provider.
  int local_rank = 0;
  int local_size = 0;
  bool shm_ok_everywhere = true;
  for (int r = 0; r < static_cast<int>(records.size()); ++r) {
    shm_ok_everywhere = shm_ok_everywhere && record_shm_ok(records[r]);
    if (record_host(records[r]) != my_host) continue;
    if (r < setup.rank) ++local_rank;
    ++local_size;
  }
  const bool all_on_this_host = local_size == setup.nranks;
  comm->local_rank = setup.local_rank >= 0 ? setup.local_rank : local_rank;
  comm->local_size = setup.local_size >= 0 ? setup.local_size : local_size;
  const std::string transport_kind = config_string("PLEXUS_TRANSPORT").value_or("ofi");
  if (transport_kind == "ucx") {
    std::unique_ptr<ucx::UcxTransport> transport;
    PLX_CHECK(ucx::UcxTransport::open(setup.rank, setup.nranks, comm->timeout_ms, comm->async,
                                      &transport, all_on_this_host));
    comm->transport = std::move(transport);
  } else if (transport_kind == "ofi") {
    ofi::InfoPtr info;
    const ofi::RankLocality where{comm->local_rank, comm->local_size, setup.gpu_pci_bus_id};
    PLX_CHECK(ofi::select_provider(setup.rank, where, setup.gpu_visible, all_on_this_host,
                                   shm_ok_everywhere, &info));
    // 3. Endpoint and address exchange.
    std::unique_ptr<ofi::OfiTransport> transport;
    PLX_CHECK(ofi::OfiTransport::open(std::move(info), setup.rank, setup.nranks,
                                      comm->timeout_ms, max_msg_bytes.value_or(0), comm->async,
                                      &transport));
    comm->transport = std::move(transport);
  } else {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("rank {}: PLEXUS_TRANSPORT={} is not one of ofi, ucx", setup.rank,
                                 transport_kind));
  }
  const std::string provider = comm->transport->name();
  // Every rank must slice and split messages alike, or their messages will not match (and
  // libfabric's shm provider spins on a truncated receive): the settings travel with the
  // provider name and are compared. So does the hierarchical allreduce's lane schedule: its
  // plan (step and schedule) follows from these and from it.
  const std::string settings =
      fmt::format("{} chunk_bytes={} max_msg_bytes={} eager_bytes={} hierarchical_lanes={}",
                  provider, comm->chunk_bytes, max_msg_bytes.value_or(0),
                  comm->transport->eager_bytes(), lane_schedule_name(lanes));
  std::vector<std::vector<uint8_t>> addresses{comm->transport->local_address()};
  std::vector<std::string> nics{comm->transport->nic()};
  if (rendezvous) {
    std::vector<Bytes> endpoints;
    PLX_CHECK(comm->rendezvous->allgather(
        1, endpoint_record(settings, nics.front(), addresses.front()), &endpoints));
    PLX_CHECK(parse_endpoint_records(setup.rank, endpoints, settings, &addresses, &nics));
  }

  // 4. Connect.
  PLX_CHECK(comm->transport->connect(addresses));
  comm->host_ids.clear();
  for (const Bytes& record : records) comm->host_ids.push_back(record_host(record));
  comm->nic_ids = std::move(nics);
  PLX_CHECK(finish_setup(comm));
  comm->cost_shape.lanes = lanes;  // a split child keeps its parent's (communicator_split.cpp)

  // 5. The cost model: rank 0's parameters (cached per host, else measured), on every rank. A
  // last rendezvous round then holds every rank until all have them, so no rank leaves (and,
  // say, aborts) while another is still receiving.
  if (comm->size > 1) {
    PLX_CHECK(load_or_measure(*comm->transport, comm->next_tag_base(), my_host, &comm->hosts,
                              &comm->cost));
  }
  PLX_CHECK(open_peer_memory(comm));
  if (rendezvous) {
    std::vector<Bytes> ready;
    PLX_CHECK(comm->rendezvous->allgather(bootstrap::kLastSetupRound, Bytes{}, &ready));
  }
  log_message(LogLevel::Info,
              "communicator ready: rank {} of {}, local {} of {}, {} host{}, provider {}",
              comm->rank, comm->size, comm->local_rank, comm->local_size,
              comm->hosts.host_count(), comm->hosts.host_count() == 1 ? "" : "s", provider);
  return PLX_SUCCESS;
}

}  // namespace

plx_result_t finish_setup(plx_comm* comm) {
  comm->send_seq.assign(comm->size, 0);
  comm->recv_seq.assign(comm->size, 0);
  std::optional<int64_t> check_args;
  PLX_CHECK(config_integer("PLEXUS_CHECK_ARGS", 0, 1, &check_args));
  comm->check_args = check_args.value_or(1) != 0;
  PLX_CHECK(algo_overrides_from_env(comm->rank, &comm->overrides));
  if (comm->host_ids.size() != static_cast<size_t>(comm->size)) {
    return set_error(PLX_ERROR_INTERNAL,
                     fmt::format("rank {}: {} host ids for {} ranks", comm->rank,
                                 comm->host_ids.size(), comm->size));
  }
  comm->hosts = host_layout(comm->host_ids);
  comm->cost_shape = cost_shape(comm->hosts);
  comm->cost_shape.nics_per_host = nics_in_use(comm->hosts, comm->nic_ids);
  comm->cost_shape.eager_bytes = comm->transport->eager_bytes();
  comm->executor = std::make_unique<Executor>([comm](Task& task) { run_task(comm, task); });
  comm->executor->set_wait_hint([transport = comm->transport.get()] {
    return transport->wait_hint();
  });
  PLX_CHECK(pin_progress_thread(comm));
  return PLX_SUCCESS;
}

plx_result_t destroy_communicator(plx_comm* comm) {
  plx_result_t result = PLX_SUCCESS;
  // NCCL flushes outstanding work before destroying: so do we, then stop the progress thread.
  comm->executor->drain();
  comm->executor->stop(PLX_ERROR_ABORTED, "the communicator was destroyed");
  if (comm->rendezvous) {
    Transport* transport = comm->transport.get();
    result = comm->rendezvous->goodbye([transport] { transport->poll_once(); });
    if (result == PLX_SUCCESS) clear_error();  // progress passes may have recorded noise
  } else if (comm->size > 1 && comm->async->error() != PLX_SUCCESS) {
    // A split communicator that already failed (a member aborted it or was lost): there is
    // nobody to agree with; say why and free it at once.
    result = set_error(comm->async->error(),
                       fmt::format("rank {}: {}", comm->rank, comm->async->message()));
  } else if (comm->size > 1) {
    // A split communicator: a barrier, so that no member frees its endpoint while a peer's
    // last messages to it are still in flight. Members that leave it first close their
    // endpoints while others still finish it: that is not a failure.
    comm->transport->begin_shutdown();
    result = dissemination_barrier(*comm->transport, comm->next_tag_base(), CollArgs{});
  }
  if (comm->liveness && !comm->rendezvous) comm->liveness->forget_communicator(comm->comm_id);
  // Every rank has said goodbye (or one was lost): nobody needs our endpoint any more.
  comm->transport.reset();
  comm->rendezvous.reset();
  if (comm->server) {
    // Every rank has its ALL_DONE and is closing; a few seconds is plenty. When the goodbye
    // failed (a rank lost or stuck, already waited for up to the timeout) the server cannot
    // finish either: close it at once rather than wait a second time.
    const auto wait = result == PLX_SUCCESS
                          ? std::min<std::chrono::milliseconds>(
                                std::chrono::milliseconds(comm->timeout_ms), std::chrono::seconds(10))
                          : std::chrono::milliseconds(0);
    const auto deadline = std::chrono::steady_clock::now() + wait;
    if (!comm->server->wait_finished(deadline) && result == PLX_SUCCESS) {
      log_message(LogLevel::Warn, "rendezvous server still busy at shutdown; closing it");
    }
    comm->server.reset();
  }
  delete comm;
  return result;
}

void abort_communicator(plx_comm* comm) {
  comm->async->request_abort();
  // The running task sees the flag and returns; queued ones finish with PLX_ERROR_ABORTED.
  comm->executor->stop(PLX_ERROR_ABORTED, fmt::format("rank {}: the communicator was aborted "
                                                      "(plx_comm_abort)",
                                                      comm->rank));
  // Calls in flight on other threads see the flag within about a millisecond; wait for them to
  // leave before freeing what they use. If one never leaves, leak rather than free under it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (comm->active_calls.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (comm->rendezvous) {
    comm->rendezvous->abort_now("called plx_comm_abort");
  } else if (comm->liveness && comm->size > 1) {
    // A split communicator: its members hear it through the world's rendezvous connection.
    comm->liveness->forget_communicator(comm->comm_id);
    comm->liveness->announce_abort(
        comm->comm_id, fmt::format("rank {} (world rank {}) called plx_comm_abort on a split "
                                   "communicator",
                                   comm->rank, comm->world_rank));
  }
  if (comm->active_calls.load() > 0) {
    log_message(LogLevel::Warn, "plx_comm_abort: a call is still running on the communicator "
                                "after 10 s; its resources are leaked");
    return;
  }
  comm->rendezvous.reset();
  comm->liveness.reset();
  comm->server.reset();
  comm->transport.reset();
  delete comm;
}

}  // namespace plexus::comm
