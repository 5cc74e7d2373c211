// Framework documents (calibration/frameworks/*.json):
//   {"name": "...", "display_name": "...", "sources": ["..."],
//    "host": {"python_dispatch": s, "cpp_dispatch": s, "launch": s},
//    "fusions": {"bias_activation": bool, "dropout_add": bool, "softmax": bool, "layer_norm": bool},
//    "cross_entropy": "native" | "fp32", "optimizer": "fused" | "foreach", "clip_gradients": bool}
#include "calibration/framework.hpp"
#include "calibration/embedded.hpp"
#include "calibration/json_reader.hpp"

#include <fmt/format.h>

namespace dtsim::calibration {

Framework parse_framework(const std::string& json_text, const std::string& origin) {
  const detail::Reader r(origin);
  const auto doc = detail::parse_document(json_text, origin);
  r.expect_object(
      doc, "", {"name", "display_name", "sources", "host", "fusions", "cross_entropy", "optimizer", "clip_gradients"});
  Framework f;
  f.name = r.string(doc, "", "name");
  f.display_name = r.string(doc, "", "display_name");
  const auto& sources = r.member(doc, "", "sources", "a non-empty array of strings");
  r.expect_array(sources, "/sources", true);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (!sources[i].is_string()) r.fail(detail::pointer("/sources", i), "expected a string");
    f.sources.push_back(sources[i].get<std::string>());
  }
  const auto& host = r.member(doc, "", "host", "an object with python_dispatch, cpp_dispatch and launch");
  r.expect_object(host, "/host", {"python_dispatch", "cpp_dispatch", "launch"});
  f.host = {r.non_negative(host, "/host", "python_dispatch", "seconds"),
            r.non_negative(host, "/host", "cpp_dispatch", "seconds"),
            r.non_negative(host, "/host", "launch", "seconds")};
  const auto& fusions =
      r.member(doc, "", "fusions", "an object with bias_activation, dropout_add, softmax and layer_norm");
  r.expect_object(fusions, "/fusions", {"bias_activation", "dropout_add", "softmax", "layer_norm"});
  f.fused_bias_activation = r.boolean(fusions, "/fusions", "bias_activation");
  f.fused_dropout_add = r.boolean(fusions, "/fusions", "dropout_add");
  f.fused_softmax = r.boolean(fusions, "/fusions", "softmax");
  f.fused_layer_norm = r.boolean(fusions, "/fusions", "layer_norm");
  f.fp32_cross_entropy = r.one_of(doc, "", "cross_entropy", {"native", "fp32"}) == "fp32";
  f.optimizer = r.one_of(doc, "", "optimizer", {"fused", "foreach"}) == "fused" ? OptimizerKernels::fused
                                                                                : OptimizerKernels::foreach;
  f.clip_gradients = r.boolean(doc, "", "clip_gradients");
  return f;
}

std::optional<Framework> find_framework(const std::string& name) {
  return parse_embedded(embedded_frameworks(), name, "calibration/frameworks", parse_framework);
}

std::vector<std::string> framework_names() {
  return embedded_stems(embedded_frameworks());
}

} // namespace dtsim::calibration
