#pragma once
// Closed-form times of the collective schedules (make_schedule) on a uniform, contention-free network: a
// transfer between two positions costs alpha + bytes / bandwidth, a position sends and receives at the same
// time (full duplex), concurrent sends of one position share its bandwidth (k messages of m bytes in one
// step take alpha + k m / bandwidth), and reducing costs gamma seconds per byte. The reduction overlaps the
// step's receives (NCCL's recvReduceSend reduces slices as they arrive), so a position's step takes
// alpha + max(max(bytes sent, bytes received) / bandwidth, bytes reduced * gamma), alpha only when it moves
// something, and a step in lock step lasts as long as its slowest position. Each formula, with its
// source, is in closed_form.cpp; they are derived from the algorithms' definitions, not by walking the
// schedules, so the tests can hold the two against each other.
#include "sim/collectives/nccl.hpp"
#include "sim/collectives/schedule.hpp"

namespace dtsim::collectives {

// Seconds for the request. `automatic` is resolved with choose_algorithm. Throws std::invalid_argument for a
// request make_schedule refuses. Each is the schedule's time when all positions run their steps in lock step
// (with blocks of S/n bytes where the schedule cuts an integral buffer into whole bytes).
double closed_form_time(const Request& request, double alpha, double bandwidth, double gamma);

// The hierarchical all-reduce, reduce-scatter and all-gather and the in-switch all-reduce with different
// intra-node and inter-node links. Throws std::invalid_argument for any other algorithm (which does not tell the
// links apart).
double closed_form_time(const Request& request, double alpha_intra, double bandwidth_intra, double alpha_inter,
                        double bandwidth_inter, double gamma);

// A resolved request (resolve()) as NCCL runs it over one link class: its wire model's per-call latency, every step's
// latency the larger of alpha and the protocol's per-step latency on `link`, and its bytes on the wire at the smaller
// of the bandwidth and the protocol's rate cap (nccl.hpp).
double closed_form_time(const Request& resolved, const WireModel& wire, LinkClass link, double alpha, double bandwidth,
                        double gamma);

} // namespace dtsim::collectives
