// Ensemble config (servers, weights, warm start) and the weighted pick of a server per call.
#include "infer/ensemble.h"

#include <cmath>
#include <numeric>

namespace kf {

using json = nlohmann::json;

namespace {

// Weights from `uniform`, null (when `null_means_uniform`) or a list; normalised. An empty result
// without error means "not configured".
Result<std::vector<double>> parse_weights(const json& tree, const std::string& name,
                                          const std::string& where, size_t servers,
                                          bool null_means_uniform) {
  using R = Result<std::vector<double>>;
  const std::string key = where + "." + name;
  const std::string how = "give `uniform` or a list of " + std::to_string(servers) +
                          " numbers >= 0 (one per server in " + where + ".servers), not all 0";
  json value = tree.contains(name) ? tree.at(name) : json();
  if (value.is_null()) {
    if (!null_means_uniform) return std::vector<double>{};
    value = "uniform";
  }
  if (value.is_string()) {
    if (value.get<std::string>() != "uniform")
      return R::error(key + ": '" + value.get<std::string>() + "' is not a weighting; " + how);
    return std::vector<double>(servers, 1.0 / static_cast<double>(servers));
  }
  if (!value.is_array())
    return R::error(key + ": expected a list, got " + value.dump() + "; " + how);
  if (value.size() != servers)
    return R::error(key + ": has " + std::to_string(value.size()) + " weight" +
                    (value.size() == 1 ? "" : "s") + " but there " +
                    (servers == 1 ? "is 1 server" : "are " + std::to_string(servers) + " servers") +
                    "; " + how);
  std::vector<double> weights;
  for (size_t i = 0; i < value.size(); ++i) {
    const json& w = value[i];
    if (!w.is_number() || !std::isfinite(w.get<double>()) || w.get<double>() < 0)
      return R::error(key + "[" + std::to_string(i) + "]: " + w.dump() + " is not a number >= 0; " +
                      how);
    weights.push_back(w.get<double>());
  }
  double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  if (total <= 0)
    return R::error(key + ": all weights are 0, so no server could be picked; " + how);
  for (double& w : weights) w /= total;
  return weights;
}

}  // namespace

Result<Ensemble> Ensemble::from_config(const json& tree, const std::string& where) {
  using R = Result<Ensemble>;
  if (!tree.is_object())
    return R::error(where + ": expected a map with `servers` (and `weights`), got " + tree.dump());
  const std::string servers_key = where + ".servers";
  if (!tree.contains("servers") || !tree.at("servers").is_array() || tree.at("servers").empty())
    return R::error(servers_key +
                    ": needs a list of one or more server maps (server_type, model_name, ...); "
                    "see configs/inference/server.yaml");
  Ensemble ensemble;
  const json& servers = tree.at("servers");
  for (size_t i = 0; i < servers.size(); ++i) {
    auto server = parse_server(servers[i], servers_key + "[" + std::to_string(i) + "]");
    if (!server) return server.status();
    ensemble.servers_.push_back(std::move(server.value()));
  }
  auto weights = parse_weights(tree, "weights", where, servers.size(), true);
  if (!weights) return weights.status();
  ensemble.weights_ = std::move(weights.value());
  auto warmstart = parse_weights(tree, "weights_warmstart", where, servers.size(), false);
  if (!warmstart) return warmstart.status();
  ensemble.warmstart_ = std::move(warmstart.value());

  if (tree.contains("trials_warmstart") && !tree.at("trials_warmstart").is_null()) {
    const json& t = tree.at("trials_warmstart");
    if (!t.is_number_integer() || t.get<int64_t>() < 0)
      return R::error(where + ".trials_warmstart: expected a whole number >= 0, got " + t.dump());
    ensemble.trials_warmstart_ = static_cast<int>(t.get<int64_t>());
  }
  return ensemble;
}

const std::vector<double>& Ensemble::weights_for(int trial) const {
  bool warm = !warmstart_.empty() && trials_warmstart_ > 0 && trial <= trials_warmstart_;
  return warm ? warmstart_ : weights_;
}

size_t Ensemble::pick(int trial, std::mt19937_64& rng) const {
  const std::vector<double>& weights = weights_for(trial);
  // 53 random bits → [0, 1): the same picks for the same seed on every standard library.
  double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  double cumulative = 0;
  size_t last_positive = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0) continue;
    last_positive = i;
    cumulative += weights[i];
    if (u < cumulative) return i;
  }
  return last_positive;  // rounding left u just above the sum
}

}  // namespace kf
