#pragma once
// The run-level replay of a whole training job (SimGrid-free header): a job controller trains, checkpoints and
// restarts; failure sources and the cloud's interruptions interrupt it. Time is SimGrid's: actors sleep and wait on a
// condition with a deadline, so there is no event loop of dtsim's own.
#include "sim/lifecycle/lifecycle.hpp"

#include <cstdint>

namespace dtsim::engine {

// One trial of the job, its random draws from `seed` (the scenario's seed and the trial's number). Runs a SimGrid
// engine: once per process, as every replay.
lifecycle::TrialResult replay_job(const lifecycle::JobTimes& job, std::uint64_t seed);

} // namespace dtsim::engine
