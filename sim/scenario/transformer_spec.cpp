// model.transformer: a transformer described by its shapes (models::TransformerSpec), either a published
// configuration with some fields changed ("base": "bert-large", "sequence": 128) or every field given. The keys are
// TransformerSpec's field names; transformer_json() writes them back, resolved, for to_json.
#include "models/transformer.hpp"
#include "sim/scenario/limits.hpp"
#include "sim/scenario/reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace dtsim::scenario::detail {
namespace {

// Fields a transformer without a base must give: the rest have defaults that describe a GPT-style block.
const std::vector<std::string> kRequired{"layers", "hidden", "heads", "ffn_hidden", "sequence", "vocabulary"};

const std::vector<std::string> kKeys{"base",
                                     "name",
                                     "layers",
                                     "decoder_layers",
                                     "hidden",
                                     "heads",
                                     "kv_heads",
                                     "head_dim",
                                     "ffn_hidden",
                                     "activation",
                                     "gated_ffn",
                                     "sequence",
                                     "decoder_sequence",
                                     "vocabulary",
                                     "tied_embeddings",
                                     "positions",
                                     "max_positions",
                                     "relative_buckets",
                                     "norm",
                                     "biases",
                                     "dropout",
                                     "causal",
                                     "post_norm",
                                     "embedding_norm",
                                     "final_norm",
                                     "token_types",
                                     "bert_heads",
                                     "adaptive",
                                     "moe"};

const std::vector<std::string>& activation_names() {
  static const std::vector<std::string> names{"relu", "gelu", "silu"};
  return names;
}
const std::vector<std::string>& positions_names() {
  static const std::vector<std::string> names{"none", "learned", "sinusoidal", "rotary", "relative_bias"};
  return names;
}
const std::vector<std::string>& norm_names() {
  static const std::vector<std::string> names{"layer_norm", "rms_norm"};
  return names;
}

// Enumerators are declared in the order of their names (enum_of: reader.hpp).
template <class E> std::string name_of(const std::vector<std::string>& names, E value) {
  return names.at(static_cast<std::size_t>(value));
}

// Every count has the format's bound (limits.hpp), so that the layer table's products stay exact.
int small(const Object& o, std::string_view key, std::int64_t min, int fallback, std::int64_t max) {
  return static_cast<int>(o.integer(key, min, fallback, max));
}
std::int64_t large(const Object& o, std::string_view key, std::int64_t min, std::int64_t fallback, std::int64_t max) {
  return o.integer(key, min, fallback, max);
}

void read_adaptive(const Object& t, models::AdaptiveSpec& adaptive) {
  const Object a = t.object("adaptive", {"cutoffs", "factor"});
  if (!a.present()) return;
  if (const json* cutoffs = a.get("cutoffs")) {
    if (!cutoffs->is_array()) a.fail("cutoffs", "expected an array of vocabulary indices, got " + show(*cutoffs));
    adaptive.cutoffs.clear();
    for (std::size_t i = 0; i < cutoffs->size(); ++i) {
      const json& c = (*cutoffs)[i];
      if (!(c.is_number_integer() || c.is_number_unsigned()) || c.get<std::int64_t>() < 1 ||
          c.get<std::int64_t>() > limits::kVocabulary)
        throw ScenarioError(a.file(), fmt::format("{}/{}", a.pointer("cutoffs"), i),
                            fmt::format("expected an integer >= 1 and <= {}, got {}", limits::kVocabulary, show(c)));
      adaptive.cutoffs.push_back(c.get<std::int64_t>());
    }
  }
  adaptive.factor = small(a, "factor", 1, adaptive.factor, limits::kSmallCount);
}

void read_moe(const Object& t, models::MoeSpec& moe) {
  const Object m = t.object("moe", {"experts", "top_k", "capacity_factor", "ffn_hidden", "every"});
  if (!m.present()) return;
  moe.experts = small(m, "experts", 0, moe.experts, limits::kExperts);
  moe.top_k = small(m, "top_k", 1, moe.top_k, limits::kExperts);
  moe.capacity_factor = m.number("capacity_factor", 0, moe.capacity_factor, 1e3);
  if (!(moe.capacity_factor > 0))
    m.fail("capacity_factor", fmt::format("expected a number > 0, got {}", show(*m.get("capacity_factor"))));
  moe.ffn_hidden = large(m, "ffn_hidden", 0, moe.ffn_hidden, limits::kFfnWidth);
  moe.every = small(m, "every", 1, moe.every, limits::kLayers);
}

} // namespace

void read_transformer(const Object& model, const std::string& scenario_name, ModelSpec& spec) {
  const Object t = model.object("transformer", kKeys);
  models::TransformerSpec s;
  const bool based = t.has("base");
  if (based) {
    s = models::transformer_spec(
        t.choice("base", models::transformer_spec_names(), "transformer configuration", std::nullopt));
  } else {
    for (const auto& key : kRequired)
      if (!t.has(key))
        t.fail(key, fmt::format("missing; a transformer without a \"base\" needs {} (or give \"base\": one of {})",
                                quoted_list(kRequired), quoted_list(models::transformer_spec_names())));
  }
  s.name = t.string("name", based ? s.name : scenario_name);
  s.layers = small(t, "layers", 1, s.layers, limits::kLayers);
  s.decoder_layers = small(t, "decoder_layers", 0, s.decoder_layers, limits::kLayers);
  s.hidden = large(t, "hidden", 1, s.hidden, limits::kWidth);
  s.heads = small(t, "heads", 1, s.heads, limits::kHeads);
  s.kv_heads = small(t, "kv_heads", 0, s.kv_heads, limits::kHeads);
  s.head_dim = large(t, "head_dim", 0, s.head_dim, limits::kWidth);
  s.ffn_hidden = large(t, "ffn_hidden", 1, s.ffn_hidden, limits::kFfnWidth);
  s.activation =
      enum_of<models::Activation>(activation_names(), t.choice("activation", activation_names(), "activation",
                                                               name_of(activation_names(), s.activation)));
  s.gated_ffn = t.boolean("gated_ffn", s.gated_ffn);
  s.sequence = large(t, "sequence", 1, s.sequence, limits::kSequence);
  s.decoder_sequence = large(t, "decoder_sequence", 0, s.decoder_sequence, limits::kSequence);
  s.vocabulary = large(t, "vocabulary", 1, s.vocabulary, limits::kVocabulary);
  s.tied_embeddings = t.boolean("tied_embeddings", s.tied_embeddings);
  s.positions =
      enum_of<models::Positions>(positions_names(), t.choice("positions", positions_names(), "position encoding",
                                                             name_of(positions_names(), s.positions)));
  // A base's learned position table grows to a longer sequence (GPT-3 at 4k tokens) unless max_positions is given;
  // it keeps its size for a shorter one (BERT's 512 rows at sequence 128).
  if (t.has("max_positions"))
    s.max_positions = large(t, "max_positions", 0, s.max_positions, limits::kSequence);
  else if (s.max_positions > 0)
    s.max_positions = std::max({s.max_positions, s.sequence, s.decoder_sequence});
  s.relative_buckets = small(t, "relative_buckets", 1, s.relative_buckets, limits::kSmallCount);
  s.norm = enum_of<models::Norm>(norm_names(), t.choice("norm", norm_names(), "norm", name_of(norm_names(), s.norm)));
  s.biases = t.boolean("biases", s.biases);
  s.dropout = t.boolean("dropout", s.dropout);
  s.causal = t.boolean("causal", s.causal);
  s.post_norm = t.boolean("post_norm", s.post_norm);
  s.embedding_norm = t.boolean("embedding_norm", s.embedding_norm);
  s.final_norm = t.boolean("final_norm", s.final_norm);
  s.token_types = small(t, "token_types", 0, s.token_types, limits::kSmallCount);
  s.bert_heads = t.boolean("bert_heads", s.bert_heads);
  read_adaptive(t, s.adaptive);
  read_moe(t, s.moe);
  try {
    spec.workload = models::transformer(s);
  } catch (const std::invalid_argument& e) {
    t.fail_here(e.what());
  }
  spec.transformer = std::move(s);
}

json transformer_json(const models::TransformerSpec& s) {
  return {{"name", s.name},
          {"layers", s.layers},
          {"decoder_layers", s.decoder_layers},
          {"hidden", s.hidden},
          {"heads", s.heads},
          {"kv_heads", s.kv_heads},
          {"head_dim", s.head_dim},
          {"ffn_hidden", s.ffn_hidden},
          {"activation", name_of(activation_names(), s.activation)},
          {"gated_ffn", s.gated_ffn},
          {"sequence", s.sequence},
          {"decoder_sequence", s.decoder_sequence},
          {"vocabulary", s.vocabulary},
          {"tied_embeddings", s.tied_embeddings},
          {"positions", name_of(positions_names(), s.positions)},
          {"max_positions", s.max_positions},
          {"relative_buckets", s.relative_buckets},
          {"norm", name_of(norm_names(), s.norm)},
          {"biases", s.biases},
          {"dropout", s.dropout},
          {"causal", s.causal},
          {"post_norm", s.post_norm},
          {"embedding_norm", s.embedding_norm},
          {"final_norm", s.final_norm},
          {"token_types", s.token_types},
          {"bert_heads", s.bert_heads},
          {"adaptive", {{"cutoffs", s.adaptive.cutoffs}, {"factor", s.adaptive.factor}}},
          {"moe",
           {{"experts", s.moe.experts},
            {"top_k", s.moe.top_k},
            {"capacity_factor", s.moe.capacity_factor},
            {"ffn_hidden", s.moe.ffn_hidden},
            {"every", s.moe.every}}}};
}

} // namespace dtsim::scenario::detail
