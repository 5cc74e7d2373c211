// Cloud instance presets (topologies/instances/*.json): plain numbers in base units, every figure with a source.
#include "topologies/instance.hpp"
#include "topologies/embedded.hpp"

#include "io/json_text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

namespace dtsim::topologies {
namespace {

using nlohmann::json;

class Reader {
public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& pointer, const std::string& what) const {
    throw std::runtime_error(fmt::format("{}: {}: {}", origin_, pointer, what));
  }
  const json& at(const json& object, const std::string& pointer, const std::string& key) const {
    if (!object.is_object() || !object.contains(key)) fail(pointer + "/" + key, "missing");
    return object.at(key);
  }
  std::string text(const json& object, const std::string& pointer, const std::string& key) const {
    const json& v = at(object, pointer, key);
    if (!v.is_string()) fail(pointer + "/" + key, fmt::format("expected a string, got {}", v.type_name()));
    return v.get<std::string>();
  }
  double number(const json& object, const std::string& pointer, const std::string& key, double min) const {
    const json& v = at(object, pointer, key);
    if (!v.is_number() || v.get<double>() < min)
      fail(pointer + "/" + key, fmt::format("expected a number >= {}, got {}", min, v.dump()));
    return v.get<double>();
  }
  int count(const json& object, const std::string& pointer, const std::string& key) const {
    const json& v = at(object, pointer, key);
    if (!v.is_number_integer() || v.get<long>() < 1)
      fail(pointer + "/" + key, fmt::format("expected an integer >= 1, got {}", v.dump()));
    return v.get<int>();
  }

private:
  std::string origin_;
};

} // namespace

Instance parse_instance(const std::string& json_text, const std::string& origin) {
  const Reader r(origin);
  json doc;
  try {
    doc = io::parse_json(json_text);
  } catch (const io::JsonTextError& e) {
    throw std::runtime_error(
        fmt::format("{}: {}invalid JSON: {}", origin, e.pointer().empty() ? "" : e.pointer() + ": ", e.what()));
  }
  Instance i;
  i.name = r.text(doc, "", "name");
  i.provider = r.text(doc, "", "provider");
  i.display_name = r.text(doc, "", "display_name");
  i.gpu = r.text(doc, "", "gpu");
  i.gpus = r.count(doc, "", "gpus");
  i.gpu_memory_bytes = r.number(doc, "", "gpu_memory_bytes", 1);
  i.vcpus = r.count(doc, "", "vcpus");
  i.host_memory_bytes = r.number(doc, "", "host_memory_bytes", 1);
  const json& intra = r.at(doc, "", "intra_node");
  i.fabric = r.text(intra, "/intra_node", "fabric");
  if (i.fabric != "nvlink" && i.fabric != "pcie" && i.fabric != "none")
    r.fail("/intra_node/fabric", fmt::format("expected \"nvlink\", \"pcie\" or \"none\", got \"{}\"", i.fabric));
  i.topology = r.text(intra, "/intra_node", "topology");
  i.intra_bandwidth = r.number(intra, "/intra_node", "bandwidth_per_gpu_bytes_per_second", 0);
  const json& net = r.at(doc, "", "network");
  i.nics = r.count(net, "/network", "nics");
  // null: the provider does not publish it; a scenario on several such nodes must give the NIC bandwidth itself.
  if (!r.at(net, "/network", "nic_bandwidth_bits_per_second").is_null())
    i.nic_bandwidth = r.number(net, "/network", "nic_bandwidth_bits_per_second", 1) / 8;
  i.network_technology = r.text(net, "/network", "technology");
  i.tcp.enabled = i.network_technology.find("TCP") != std::string::npos;
  if (net.contains("tcp")) {
    const json& tcp = net.at("tcp");
    if (!i.tcp.enabled) r.fail("/network/tcp", "only a TCP network (its technology names TCP) has TCP streams");
    i.tcp.streams = r.count(tcp, "/network/tcp", "streams");
    if (!r.at(tcp, "/network/tcp", "stream_bandwidth_bits_per_second").is_null())
      i.tcp.stream_bandwidth = r.number(tcp, "/network/tcp", "stream_bandwidth_bits_per_second", 1) / 8;
    i.tcp.mtu = r.number(tcp, "/network/tcp", "mtu_bytes", 576);
  }
  const json& price = r.at(doc, "", "price");
  i.price.on_demand_per_hour = r.number(price, "/price", "on_demand_per_hour", 0);
  if (const json& spot = r.at(price, "/price", "spot_per_hour"); !spot.is_null())
    i.price.spot_per_hour = r.number(price, "/price", "spot_per_hour", 0);
  i.price.currency = r.text(price, "/price", "currency");
  i.price.region = r.text(price, "/price", "region");
  i.price.date = r.text(price, "/price", "date");
  i.price.source = r.text(price, "/price", "source");
  if (doc.contains("power")) {
    const json& power = doc.at("power");
    i.host_power = r.number(power, "/power", "host_watts", 1);
    i.host_power_source = r.text(power, "/power", "source");
  }
  const json& sources = r.at(doc, "", "sources");
  if (!sources.is_array() || sources.empty()) r.fail("/sources", "expected a non-empty array of strings");
  for (const auto& s : sources)
    i.sources.push_back(s.is_string() ? s.get<std::string>() : s.dump());
  i.notes = r.text(doc, "", "notes");
  return i;
}

std::vector<Instance> all_instances() {
  std::vector<Instance> out;
  for (const auto& file : embedded_instances()) {
    auto i = parse_instance(file.text, fmt::format("topologies/instances/{}.json", file.stem));
    if (i.name != file.stem)
      throw std::runtime_error(fmt::format("topologies/instances/{}.json: /name: expected \"{}\" (the file name), got "
                                           "\"{}\"",
                                           file.stem, file.stem, i.name));
    out.push_back(std::move(i));
  }
  std::sort(out.begin(), out.end(), [](const Instance& a, const Instance& b) { return a.name < b.name; });
  return out;
}

std::vector<std::string> instance_names() {
  std::vector<std::string> names;
  for (const auto& file : embedded_instances())
    names.push_back(file.stem);
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<Instance> find_instance(const std::string& name) {
  for (const auto& file : embedded_instances())
    if (file.stem == name) {
      auto i = parse_instance(file.text, fmt::format("topologies/instances/{}.json", file.stem));
      return i;
    }
  return std::nullopt;
}

} // namespace dtsim::topologies
