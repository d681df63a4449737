// The ensemble: the configured servers and how one is picked per LLM call (`weights`, or
// `weights_warmstart` during the first `trials_warmstart` iterations).
#pragma once

#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infer/infer.h"
#include "util/status.h"

namespace kf {

class Ensemble {
 public:
  // From the composed `inference` tree: {servers, weights, weights_warmstart, trials_warmstart}.
  // Weights are `uniform` (or null) or one number >= 0 per server, not all 0. Errors name the key
  // (`inference.weights`, `inference.servers[1].temperature`, ...), prefixed by `where`.
  static Result<Ensemble> from_config(const nlohmann::json& inference_tree,
                                      const std::string& where = "inference");

  // The server for a call of LLM iteration `trial` (counted from 1): by weights_warmstart while
  // trial <= trials_warmstart (when given), else by weights. Draws one number from `rng`.
  size_t pick(int trial, std::mt19937_64& rng) const;

  const std::vector<ServerConfig>& servers() const { return servers_; }
  // Normalised to sum 1. The warmstart ones are empty when not configured.
  const std::vector<double>& weights() const { return weights_; }
  const std::vector<double>& warmstart_weights() const { return warmstart_; }
  int trials_warmstart() const { return trials_warmstart_; }
  // The weights in effect for `trial`.
  const std::vector<double>& weights_for(int trial) const;

 private:
  Ensemble() = default;

  std::vector<ServerConfig> servers_;
  std::vector<double> weights_, warmstart_;
  int trials_warmstart_ = 0;
};

}  // namespace kf
