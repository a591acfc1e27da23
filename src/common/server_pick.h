// Choosing among several servers (`scuda run --pick`): each is asked for its
// status, and the list is put in the order the client should try them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace scuda {

// How `scuda run` orders a list of servers, or which one each process
// takes (kLocalRank: the one at its local rank in a job's list).
enum class Pick { kFirst, kLeastLoaded, kLocalRank };

// One server's load, from its status answer.
struct ServerLoad {
  std::string address;
  std::string error;  // why it did not answer; empty when it did
  uint64_t gpus = 0;
  uint64_t busy = 0;        // sessions running plus clients in its queue
  uint64_t free_bytes = 0;  // device memory not in use, over all its GPUs
};

// Parses `pick` ("first", "least-loaded" or "local-rank"); false for
// anything else.
bool parse_pick(const std::string& pick, Pick* out);

// This process's rank among a job's processes on this machine, as launchers
// set it: LOCAL_RANK (torchrun, accelerate, DeepSpeed), else SLURM_LOCALID
// (srun), else OMPI_COMM_WORLD_LOCAL_RANK (Open MPI), *name saying which;
// -1 when none is set to a number.
int local_rank(std::string* name);

// Asks each server of `servers` for its status with `token`.
std::vector<ServerLoad> measure_loads(const std::vector<std::string>& servers,
                                      const std::string& token);

// The servers that answered, least loaded first: fewest busy sessions per
// GPU, then most free device memory, then the list's order.
std::vector<ServerLoad> least_loaded_first(std::vector<ServerLoad> loads);

// One line saying a server's load, for the user.
std::string describe_load(const ServerLoad& load);

// Puts `servers` least loaded first, leaving out those that do not answer
// (each named in *left_out, why included); *chosen says the first's load.
// False, with *error, when none answers.
bool order_by_load(std::vector<std::string>* servers, const std::string& token,
                   std::vector<std::string>* left_out, std::string* chosen, std::string* error);

}  // namespace scuda
