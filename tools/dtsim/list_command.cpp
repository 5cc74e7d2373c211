// `dtsim list`: what a scenario can name (sim/studies/catalog.hpp).
#include "sim/studies/catalog.hpp"
#include "tools/dtsim/commands.hpp"

#include <iostream>

namespace dtsim::cli {

int list_command(const std::string& what, const std::string& json_out, const std::string& csv_out) {
  const auto text = studies::catalog_text(what);
  check_writable({json_out, csv_out});
  const auto document = studies::catalog_document(what);
  std::ostream& out = report_stream({json_out, csv_out});
  out << text;
  return finish_outputs(out, {{csv_out, csv_of(document["items"])}}, document, json_out, "", kExitOk);
}

} // namespace dtsim::cli
