#pragma once
// What `dtsim train` prints and writes: the run's inputs, the trials' statistics, every trial as JSON and CSV.
#include "sim/studies/train.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace dtsim::studies {

std::string format_train(const TrainResult& result); // what `dtsim train` prints
nlohmann::json to_json(const TrainResult& result);
// `dtsim train --json`: the result with the command and its provenance.
nlohmann::json train_document(const TrainResult& result);
std::string train_csv(const TrainResult& result); // one row per trial

} // namespace dtsim::studies
