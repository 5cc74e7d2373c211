// Framework documents (calibration/frameworks/*.json):
//   {"name": "...", "display_name": "...", "sources": ["..."],
//    "host": {"python_dispatch": s, "cpp_dispatch": s, "launch": s},
//    "fusions": {"bias_activation": bool, "dropout_add": bool, "softmax": bool, "layer_norm": bool,
//                "softmax_max_keys": n (optional)},
//    "attention": "unfused" | "fused" | "cudnn", "cross_entropy": "native" | "fp32", "optimizer": "fused" | "foreach",
//    "clip_gradients": bool, "gradient_reduce": "as_trained" | "bf16_in_fp32" | "fp32",
//    "reduce_during_backward": "never" | "off" | "on" | "zero3", "distributed_optimizer": bool,
//    "gradient_buffer": "none" | "when_fp32" | "always", "clip_always_scales": bool, "pads_vocabulary": bool,
//    "overlap_p2p": bool, "backward_prefetch": "pre" | "post", "tensor_fusion": {"cycle": s, "threshold": bytes},
//    "stream_shares": {"layer_norm" | "gated_activation": {"forward": f, "backward": f}},
//    "pipeline_split": "balanced" | "uniform"}
// The habits after "clip_gradients" are optional; absent, they are PyTorch DDP's: fused attention where the GPU has
// it, gradients reduced as trained, in buckets under backward, optimizer states shardable, sharded weights gathered
// as the unit before them starts its backward; no tensor fusion cycle (DDP's buckets); every memory-bound kernel at
// the streaming rate (stream share 1); pipeline chunks balanced by time. An alias is a file of its
// own: {"name": "megatron", "alias_of": "megatron-core"}.
#include "calibration/framework.hpp"
#include "calibration/embedded.hpp"
#include "calibration/json_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <type_traits>

namespace dtsim::calibration {

Framework parse_framework(const std::string& json_text, const std::string& origin) {
  const detail::Reader r(origin);
  const auto doc = detail::parse_document(json_text, origin);
  r.expect_object(doc, "",
                  {"name",
                   "display_name",
                   "sources",
                   "host",
                   "fusions",
                   "attention",
                   "cross_entropy",
                   "optimizer",
                   "clip_gradients",
                   "gradient_reduce",
                   "reduce_during_backward",
                   "distributed_optimizer",
                   "gradient_buffer",
                   "clip_always_scales",
                   "pads_vocabulary",
                   "backward_prefetch",
                   "tensor_fusion",
                   "overlap_p2p",
                   "stream_shares",
                   "pipeline_split"});
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
  r.expect_object(fusions, "/fusions", {"bias_activation", "dropout_add", "softmax", "layer_norm", "softmax_max_keys"});
  f.fused_bias_activation = r.boolean(fusions, "/fusions", "bias_activation");
  f.fused_dropout_add = r.boolean(fusions, "/fusions", "dropout_add");
  f.fused_softmax = r.boolean(fusions, "/fusions", "softmax");
  f.fused_layer_norm = r.boolean(fusions, "/fusions", "layer_norm");
  if (detail::Reader::find(fusions, "softmax_max_keys"))
    f.fused_softmax_max_keys = r.positive(fusions, "/fusions", "softmax_max_keys", "keys");
  f.fp32_cross_entropy = r.one_of(doc, "", "cross_entropy", {"native", "fp32"}) == "fp32";
  f.optimizer = r.one_of(doc, "", "optimizer", {"fused", "foreach"}) == "fused" ? OptimizerKernels::fused
                                                                                : OptimizerKernels::foreach;
  f.clip_gradients = r.boolean(doc, "", "clip_gradients");
  // Optional habits keep Framework's defaults (PyTorch DDP's) when absent: one place says what they are.
  const auto read_choice = [&](const char* key, const std::vector<std::string>& names, auto& field) {
    if (!detail::Reader::find(doc, key)) return;
    const auto chosen = r.one_of(doc, "", key, names);
    field = static_cast<std::remove_reference_t<decltype(field)>>(std::find(names.begin(), names.end(), chosen) -
                                                                  names.begin());
  };
  const auto read_flag = [&](const char* key, bool& field) {
    if (detail::Reader::find(doc, key)) field = r.boolean(doc, "", key);
  };
  read_choice("attention", {"unfused", "fused", "cudnn"}, f.attention);
  read_choice("gradient_reduce", {"as_trained", "bf16_in_fp32", "fp32"}, f.gradient_reduce);
  read_choice("reduce_during_backward", {"never", "off", "on", "zero3"}, f.reduce_during_backward);
  read_choice("gradient_buffer", {"none", "when_fp32", "always"}, f.gradient_buffer);
  read_choice("backward_prefetch", {"pre", "post"}, f.backward_prefetch);
  read_choice("pipeline_split", {"balanced", "uniform"}, f.pipeline_split);
  read_flag("distributed_optimizer", f.distributed_optimizer);
  read_flag("clip_always_scales", f.clip_always_scales);
  read_flag("pads_vocabulary", f.pads_vocabulary);
  read_flag("overlap_p2p", f.overlap_p2p);
  if (const auto* fusion = detail::Reader::find(doc, "tensor_fusion")) {
    r.expect_object(*fusion, "/tensor_fusion", {"cycle", "threshold"});
    f.fusion_cycle = r.positive(*fusion, "/tensor_fusion", "cycle", "seconds");
    f.fusion_threshold = r.positive(*fusion, "/tensor_fusion", "threshold", "bytes");
  }
  if (const auto* shares = detail::Reader::find(doc, "stream_shares")) {
    r.expect_object(*shares, "/stream_shares", {"layer_norm", "gated_activation"});
    for (const auto& [op, entry] : shares->items()) {
      // expect_object admitted these two names only.
      StreamShare& share = op == "layer_norm" ? f.layer_norm_share : f.gated_activation_share;
      const std::string at = detail::pointer("/stream_shares", op);
      r.expect_object(entry, at, {"forward", "backward"});
      share.forward = r.fraction(r.member(entry, at, "forward", "a fraction in (0, 1]"), at + "/forward");
      share.backward = r.fraction(r.member(entry, at, "backward", "a fraction in (0, 1]"), at + "/backward");
    }
  }
  return f;
}

double Framework::reduced_gradient_bytes(Precision precision) const {
  const Precision p = math_precision(precision);
  switch (gradient_reduce) {
  case GradientReduce::fp32:
    return 4;
  case GradientReduce::bf16_in_fp32:
    if (p == Precision::bf16 || p == Precision::fp8) return 4;
    break;
  case GradientReduce::as_trained:
    break;
  }
  return gradient_bytes(precision);
}

double Framework::gradient_buffer_bytes(Precision precision) const {
  const double bytes = reduced_gradient_bytes(precision);
  switch (gradient_buffer) {
  case GradientBuffer::none:
    return 0;
  case GradientBuffer::when_fp32:
    return bytes == 4 && gradient_bytes(precision) < 4 ? bytes : 0;
  case GradientBuffer::always:
    return bytes;
  }
  return 0;
}

std::optional<Framework> find_framework(const std::string& name) {
  // An alias file ({"name": "megatron", "alias_of": "megatron-core"}) names another preset; any other file is parsed
  // once, by parse_embedded.
  for (const auto& file : embedded_frameworks()) {
    if (file.stem != name || file.text.find("\"alias_of\"") == std::string::npos) continue;
    const std::string origin = fmt::format("calibration/frameworks/{}.json", file.stem);
    const auto doc = detail::parse_document(file.text, origin);
    const detail::Reader r(origin);
    r.expect_object(doc, "", {"name", "alias_of"});
    auto f =
        parse_embedded(embedded_frameworks(), r.string(doc, "", "alias_of"), "calibration/frameworks", parse_framework);
    if (!f) r.fail("/alias_of", "no such framework preset");
    return f;
  }
  return parse_embedded(embedded_frameworks(), name, "calibration/frameworks", parse_framework);
}

std::vector<std::string> framework_names() {
  return embedded_stems(embedded_frameworks());
}

} // namespace dtsim::calibration
