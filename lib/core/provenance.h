// Where this binary came from; defined in the file cmake/WriteProvenance.cmake generates.
#pragma once

namespace salt {
const char* salt_version();
const char* build_commit();  // salt-cpp git commit the binary was built from, or "unknown"
bool build_dirty();          // whether that source tree had uncommitted changes
}  // namespace salt
