// Forward declarations for components that export themselves to ONNX
// (export/graph.h has the builder).
#pragma once
#include <string>

namespace salt::ox {
class Graph;
using Value = std::string;
}  // namespace salt::ox
