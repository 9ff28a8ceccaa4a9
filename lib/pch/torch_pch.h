// Precompiled header shared by every torch target (see lib/CMakeLists.txt).
// Only include here what nearly every torch translation unit needs.
#pragma once
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>
