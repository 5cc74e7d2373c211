#pragma once
// A whole training run, not one iteration: how long until the model is trained and what it costs on hardware that
// fails and on capacity that is taken back. Policy and closed forms only (no SimGrid): what a checkpoint costs, the
// Young interval, the job's rate of interruptions, and the statistics over trials. The run itself is replayed by
// sim/engine (job_replay), with iteration times that the per-iteration simulation gives for each cluster shape.
#include "sim/lifecycle/energy.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::lifecycle {

// How the time to a unit's failure is drawn: exponential (a constant hazard), or Weibull with shape k (k < 1: infant
// mortality, a hazard that falls with age; k > 1: wear-out), with its scale set so that the mean is the unit's MTBF.
enum class Distribution : std::uint8_t { exponential, weibull };

// One kind of component whose failure stops the job (synchronous training: one lost rank stops every rank).
struct FailureSource {
  std::string component;     // "gpu", "host", "network", "software", ...
  double units_per_node = 1; // how many of it each node has (8 GPUs; a node's share of a switch's ports)
  double mtbf = 0;           // seconds between failures of one unit (per unit, not per job)
  Distribution distribution = Distribution::exponential;
  double weibull_shape = 1; // k, for Weibull
  double detection = 0;     // seconds from the failure to the job knowing of it: a crash is seen at once, a hang
                            // only when the collective's watchdog gives up
  std::string source;       // where the rate comes from
  int nodes = 1;            // nodes one failure takes out: a leaf switch takes every node under it
};

// Where checkpoints go. Every node writes its share at once (a fully parallel save): each at most at its own
// bandwidth, all together at most at the tier's aggregate bandwidth, so the slowest of the two bounds the write.
struct StorageSpec {
  std::string tier;           // "parallel-fs", "local-nvme", "object-store": a label for the report
  double write_bandwidth = 0; // bytes/s one node writes at
  double read_bandwidth = 0;  // bytes/s one node reads at
  double aggregate_write = 0; // bytes/s the tier takes from all nodes together; 0: no shared limit
  double aggregate_read = 0;  // likewise for reads
  double latency = 0;         // seconds per checkpoint operation (open, metadata, commit)
  bool shares_nic = true;     // the traffic goes over the nodes' NICs, and an asynchronous drain competes with
                              // training's own communication there
};

enum class CheckpointMode : std::uint8_t { sync, async };

struct CheckpointSpec {
  bool enabled = false;
  std::optional<double> interval; // seconds of training between checkpoints; absent: the Young interval
  CheckpointMode mode = CheckpointMode::sync;
  // async: the copy of each GPU's share into host memory, bytes/s (PCIe); training waits for it, then the write
  // drains in the background.
  double snapshot_bandwidth = 0;
};

// What a restart costs after a failure is known or a preempted node is back.
struct RestartSpec {
  double reschedule = 0;      // seconds to replace the failed node and launch the job again
  double startup = 0;         // seconds of process start and communicator set-up, fixed ...
  double startup_per_gpu = 0; // ... and per GPU (communicator initialization grows with the ranks)
  int warmup_iterations = 0;  // iterations after a restart that do no useful work (compilation, allocator warm-up)
};

// What the cloud may take back: each node's instance is interrupted at a rate, with a notice first.
enum class SpotPolicy : std::uint8_t {
  wait,      // the job stops, waits for a replacement instance and restarts from its checkpoint
  redundancy // Bamboo (Thorpe et al., NSDI 2023): each pipeline stage also holds its successor's layers and runs
             // their forward; a lost node's predecessor takes its stage over and training goes on without a restart
};
struct SpotSpec {
  bool enabled = false;
  // Per node, as AWS's Spot Instance Advisor counts them: the share of instances interrupted over the last 30 days.
  double interruptions_per_month = 0;
  // The job's interruptions per second: per node x nodes, or the trace's count over its span.
  double job_rate(int nodes) const {
    if (!trace.empty()) return trace.back() > 0 ? static_cast<double>(trace.size()) / trace.back() : 0;
    return interruptions_per_month / (30 * 86400.0) * nodes;
  }
  double notice = 0;                // seconds between the notice and the interruption (AWS 120, Google Cloud 30)
  double replacement = 0;           // seconds until a replacement instance runs
  double price_per_hour = 0;        // per node; 0: the on-demand price
  bool checkpoint_on_notice = true; // a checkpoint that fits in the notice is written, and no work is lost
  SpotPolicy policy = SpotPolicy::wait;
  // A recorded history instead of the rate: seconds from the run's start at which one of its nodes was interrupted,
  // replayed as is in every trial (sorted); the rate Young's interval weighs is then the trace's own.
  std::vector<double> trace;
};

// What the job does when nodes are lost: wait for their replacement (the default), or shrink to the nodes left and go
// on with fewer data-parallel replicas (Varuna, Oobleck), growing back once the replacements have come. A resize
// restarts from the last checkpoint like any restart, at the cost of a reconfiguration instead of a reschedule.
enum class GlobalBatch : std::uint8_t {
  keep, // the same global batch on fewer replicas: more micro-batches each, a longer iteration
  scale // each replica's batch as before: a smaller global batch, more iterations for the same samples
};
struct ElasticSpec {
  bool shrink = false;
  double reconfigure = 0; // seconds to re-plan and restart on the new set of nodes (survivors already running)
  GlobalBatch global_batch = GlobalBatch::keep;
  int max_lost_replicas = 4; // beyond this many replicas lost at once the job waits for replacements
};

// The run's length and the policies, as the scenario gives them.
struct RunPlan {
  std::int64_t steps = 0; // iterations of the whole run
  CheckpointSpec checkpoint;
  StorageSpec storage;
  std::vector<FailureSource> failures;
  RestartSpec restart;
  SpotSpec spot;
  ElasticSpec elastic;
};

// Everything one trial needs, in seconds: what the run-level replay is given.
struct JobTimes {
  std::int64_t steps = 0;
  int nodes = 0;
  int gpus = 0;
  double iteration = 0;          // seconds per iteration
  double iteration_draining = 0; // while an asynchronous checkpoint drains (its traffic on the NICs)
  bool checkpoints = false;
  bool async = false;
  double checkpoint_interval = 0;  // seconds of training between checkpoints
  std::int64_t interval_steps = 0; // the same in whole iterations (at least one)
  double checkpoint_blocking = 0;  // seconds training stops for a checkpoint (sync: the write; async: the snapshot)
  double checkpoint_drain = 0;     // async: seconds the write drains after the snapshot
  double checkpoint_load = 0;      // seconds to read the last checkpoint back at a restart
  double restart = 0;              // reschedule + start-up (without the load and the warm-up)
  double reschedule = 0;           // of that, replacing a lost node: when a shrunk job's lost nodes come back
  // Elastic: seconds per full step's worth of samples with k data-parallel replicas lost, k = 0 .. (the first is
  // `iteration`); empty: the job waits for replacements instead.
  std::vector<double> shrunk_iteration;
  int nodes_per_replica = 1;
  double reconfigure = 0; // a resize's cost instead of `restart`
  // Redundant computation (SpotPolicy::redundancy): the pipelines' stages, in a ring each the shadow of the next.
  struct Redundancy {
    bool enabled = false;
    int stages = 0;          // pipeline stages
    int nodes_per_stage = 0; // each node of a stage holds it for one or more data-parallel replicas
    double failover = 0;     // seconds per iteration while a node runs its lost successor's stage too
    double rejoin = 0;       // seconds the job stops when a replacement takes its stage back
    double without = 0;      // seconds per iteration without redundant computation: the useful time
  } redundancy;
  int warmup_iterations = 0;
  std::vector<FailureSource> failures;
  SpotSpec spot;
  double price_per_hour = 0; // per node, on demand
  NodePower power;           // what a node draws training and waiting (not known: no energy reported)
  EnergySpec energy;         // the facility's PUE and the grid's intensity
};

// The bytes of one checkpoint: every parameter's weights and optimizer states once (replicas write nothing extra).
struct CheckpointSize {
  double total = 0;    // bytes
  double per_node = 0; // each node's share of a fully parallel save
  double per_gpu = 0;
};

// Seconds to write (or read) `bytes_per_node` from each of `nodes` nodes at once: the per-node bound and the shared
// bound, whichever is slower (max-min sharing of equal flows through a node link and one shared link gives exactly
// this), plus the tier's latency. 0 bytes: 0.
double storage_seconds(double bytes_per_node, int nodes, double node_bandwidth, double aggregate_bandwidth,
                       double latency);

// The job's rate of interruptions (failures of any unit of any source, plus spot interruptions), per second; the
// reciprocal is the job's mean time between interruptions M.
double interruption_rate(const std::vector<FailureSource>& failures, const SpotSpec& spot, int nodes);

// The rate of interruptions that roll the job back to its checkpoint, per second: all of them, except under redundant
// computation (Bamboo) on a ring of `stages` pipeline stages, where a preemption rolls back only when a neighbouring
// stage of the victim is still down: with each node down a share p = (its preemption rate) x (notice + replacement)
// of the time, 1 - (1 - p)^2 of preemptions (p of them on a ring of two). What Young's interval weighs.
double rollback_rate(const std::vector<FailureSource>& failures, const SpotSpec& spot, int nodes, int stages);

// Young's interval (Young 1974, first order): sqrt(2 C M), C the checkpoint's cost to training, M the job's mean time
// between interruptions. Infinite when nothing interrupts.
double young_interval(double checkpoint_cost, double mtbi);

// The first-order expected fraction of wall time wasted (Young 1974; Daly 2006, eq. 1 at first order): checkpoints
// C / tau, the half interval redone after each interruption tau / 2M, and the restart R / M.
double first_order_waste(double checkpoint_cost, double interval, double mtbi, double restart);

// The cost to training of one checkpoint, what Young's interval weighs: sync the write; async the snapshot plus the
// iterations' slowdown while the write drains.
double checkpoint_cost(const JobTimes& job);

// What one trial of the run did.
struct TrialResult {
  double wall = 0;            // seconds from start to the last step
  double useful = 0;          // steps x iteration time: what an uninterrupted run without checkpoints would take
                              // (under redundancy: the iteration without its redundant computation)
  double checkpoint_time = 0; // seconds training stood still for checkpoints, plus the drain's slowdown
  double lost = 0;            // seconds of training redone (since the last complete checkpoint) and warm-ups
  double down = 0;            // seconds between an interruption and training again (detection, waiting, restart)
  int failures = 0;
  std::vector<int> failures_by_source; // in RunPlan::failures order
  int preemptions = 0;
  int checkpoints = 0; // completed
  int restarts = 0;
  int resizes = 0;       // elastic: shrinks and regrowths
  int failovers = 0;     // redundancy: preemptions a shadow took over without a restart
  double degraded = 0;   // seconds training took longer on fewer replicas, or (redundancy) for the redundant
                         // computation and after failovers (part of the wall time)
  double cost = 0;       // dollars
  double energy_kwh = 0; // at the meter: training at the node's training draw, checkpoints and down time idle
  double co2_kg = 0;
};

} // namespace dtsim::lifecycle
