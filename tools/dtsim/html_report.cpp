#include "tools/dtsim/html_report.hpp"

#include "io/units.hpp"
#include "sim/scenario/scenario.hpp"

#include <fmt/format.h>

namespace dtsim::cli {
namespace {

// A <script> element's text ends at the first "</script" (HTML's script data state). In the JSON document, which
// holds the user's text, every "</" becomes "<\/", the same JSON string (RFC 8259 allows "\/"), and "<!--", which
// can change how the parser reads on, becomes "<\u0021--". The inlined scripts are the npm builds unchanged: they
// hold no "</script" (tools/cmake/embed_report.cmake refuses one that does).
std::string json_in_script(std::string text) {
  for (std::size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 3))
    text.replace(at, 2, "<\\/");
  for (std::size_t at = text.find("<!--"); at != std::string::npos; at = text.find("<!--", at + 1))
    text.replace(at, 4, "<\\u0021--");
  return text;
}

std::string html_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

} // namespace

std::string html_report(const nlohmann::json& document) {
  const auto* assets = report_assets();
  if (assets == nullptr)
    throw scenario::ScenarioError(
        "--html", "",
        "this dtsim was built without the plotting runtime (Vega-Lite from the npm "
        "registry, which CMake installs with npm): run tools/setup.sh, then configure and build again");
  const auto command = document.value("command", std::string("run"));
  const auto name = document.contains("scenario") ? document["scenario"].value("name", std::string()) : std::string();
  const auto title = fmt::format("dtsim {}{}", command, name.empty() ? "" : ": " + name);
  // One line per inlined script keeps the page's own markup readable; the scripts are the npm builds unchanged.
  return fmt::format(
      R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="dtsim {version}">
<title>{title}</title>
<style>
{style}</style>
<script>{vega}</script>
<script>{vega_lite}</script>
<script>{vega_embed}</script>
</head>
<body>
<main id="report"><h1>{title}</h1><noscript>This report draws its figures with JavaScript.</noscript></main>
<script type="application/json" id="dtsim-document">{document}</script>
<script type="application/json" id="dtsim-units">{units}</script>
<script>
{script}</script>
</body>
</html>
)",
      fmt::arg("version",
               html_escaped(document.value("/provenance/dtsim_version"_json_pointer, std::string("unknown")))),
      fmt::arg("title", html_escaped(title)), fmt::arg("style", assets->page_style), fmt::arg("vega", assets->vega),
      fmt::arg("vega_lite", assets->vega_lite), fmt::arg("vega_embed", assets->vega_embed),
      fmt::arg("document", json_in_script(document.dump())), fmt::arg("units", io::units_document().dump()),
      fmt::arg("script", assets->page_script));
}

} // namespace dtsim::cli
