#pragma once
// MLCommons Chakra execution traces (the format ASTRA-sim and PARAM replay) in and out of dtsim's ExecutionGraph:
// one file per rank, NAME.RANK.et, each a GlobalMetadata message then one Node message per op, every message
// preceded by its length as a varint (protobuf's delimited form, as Chakra's protolib writes them).
//
// Nodes map onto ops as the graph replays them: COMP_NODE a compute op (its duration, or its FLOPs and bytes priced
// on the scenario's GPU), COMM_COLL_NODE a collective (comm_type, comm_size bytes, the process group), COMM_SEND_NODE
// and COMM_RECV_NODE a pipeline's send and receive (comm_dst, comm_src, comm_size), data and control dependencies the
// op's deps. dtsim writes its own details as attributes named dtsim_* (exact seconds, the group's members in ring
// order, the algorithm and protocol, the stream and parallel dimension), which other tools ignore and which make an
// export read back to the same graph.
#include "io/error.hpp"
#include "sim/graph/execution_graph.hpp"

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtsim::chakra {

// A trace that cannot be read or written: `file` names the file (or the folder), the message says what is wrong.
class TraceError : public InputError {
public:
  TraceError(std::string file, const std::string& message);
  const std::string& file() const { return file_; }

private:
  std::string file_;
};

// The files of a trace: `path` is a folder holding NAME.0.et, NAME.1.et, ... (one NAME), or the prefix PATH of
// PATH.0.et, PATH.1.et, ...; ranks from 0 without a gap, in rank order.
std::vector<std::filesystem::path> trace_files(const std::string& path);

struct ReadOptions {
  // Seconds of a compute node that gives no duration, from its FLOPs and bytes (num_ops, tensor_size): the scenario's
  // GPU prices it. Unset: such a node is an error.
  std::function<double(double flops, double bytes)> compute_seconds;
  double reduce_seconds_per_byte = 0; // for collectives that do not say (the GPU's reduction kernel)
  bool aggregate = false;             // every collective a phase at a time (aggregate fidelity), not step by step
};

// The graph of a trace of `ranks` ranks (the cluster's GPUs: another count is an error, as are a dependency cycle, an
// unknown node type, a dependency on a node the file does not have, and sends without their receives).
graph::ExecutionGraph read_trace(const std::string& path, int ranks, const ReadOptions& options = {});

// The memory reading the trace at `path` takes, bytes: its files and about 600 bytes a node (read, made an op and
// planned; measured), its nodes counted from their length prefixes without parsing them. 0 where the files cannot be
// found (read_trace says why).
double reading_bytes(const std::string& path);

// Writes `graph` as DIR/NAME.RANK.et (one file per rank; DIR is created) and returns the files. Ops Chakra has no node
// for (parameter-server pushes, gossip, D-PSGD's exchanges, an all-to-all with a size matrix) are an error.
std::vector<std::filesystem::path> write_trace(const graph::ExecutionGraph& graph, const std::filesystem::path& dir,
                                               const std::string& name);

} // namespace dtsim::chakra
