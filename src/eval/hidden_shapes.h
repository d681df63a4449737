// Hidden correctness shapes: sizes near the task's listed ones, drawn per job from a secret seed,
// so code specialised to exactly the listed shapes fails a check it could not see coming.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "util/status.h"

namespace kf {

// One shape as the harness names it: dimension name -> size, in the task's declaration order.
using ShapeDims = std::vector<std::pair<std::string, long>>;

// The shapes a task binary lists (`task_bin --list`).
struct ListedShapes {
  std::vector<ShapeDims> correctness;
  std::vector<ShapeDims> benchmark;
};

// "rows=8,cols=1003": the harness's Shape::id().
std::string shape_id(const ShapeDims& dims);

// The listed shapes from the stdout of `task_bin --list` (the line holding the JSON object with
// "format": "kernelfoundry-harness-shapes"; other lines are skipped).
Result<ListedShapes> parse_shape_list(const std::string& list_output);

// The extra shapes to check for correctness. For each listed correctness shape, one whose every
// dimension is moved by 1..7 up or down; then one with every dimension drawn at random. Each
// dimension stays within [min, max] of its listed values (and at least 1), so a dimension that
// never varies in the listed shapes (a channel count, a head size) is left as it is. The random
// shape's element count (product of dimensions) is at most the largest listed correctness
// shape's; a near shape keeps under it where its moves allow. No result repeats a listed shape or
// another result. The same `seed` gives the same shapes; without it they cannot be predicted.
std::vector<ShapeDims> hidden_shapes(const ListedShapes& listed, std::uint64_t seed);

// `--extra-shapes` for the harness: [{"id": "rows=8,cols=1003", "dims": {"rows": 8, ...}}, ...],
// like the "correctness" entries of `--list`. "" for no shapes.
std::string hidden_shapes_json(const std::vector<ShapeDims>& shapes);
// The reverse, for logs and tests: an error names what is malformed.
Result<std::vector<ShapeDims>> parse_hidden_shapes_json(const std::string& text);

}  // namespace kf
