// Where salt finds the files it ships besides the binary (configs/base.yaml, the
// ONNX Runtime runner script, onnxruntime-node): one folder, `<bin>/../share/salt`,
// so the same lookup works in an install prefix (bin/salt, share/salt) and in a
// build folder (app/salt, share/salt made of links into the source tree by CMake).
// Nothing here is compiled with the source tree's path: a binary runs wherever it
// is installed, and compiler caches hit across checkouts.
#pragma once
#include <filesystem>

namespace salt {

// The folder of the running executable: /proc/self/exe's, or, when that is the
// dynamic loader that was asked to run salt (`ld-linux-x86-64.so.2 salt fit ...`),
// the folder of the program the loader loaded.
std::filesystem::path executable_dir();

// Whether /proc/self/exe is the dynamic loader (ld-linux*.so, ld64.so, ld.so): salt
// was started as `<loader> <salt> ...`.
bool started_by_the_loader();

// How salt was started, as a restart of itself must repeat it: as itself
// (/proc/self/exe is salt's binary), through the dynamic loader, or through another
// program that runs salt's code in its own process (valgrind, an emulator), which
// /proc/self/exe then names (valgrind fakes readlink of it, not stat).
enum class Launch { kItself, kLoader, kOther };
Launch how_started();

// SALT_SHARE_DIR when set, else <executable_dir>/../share/salt. Throws UsageError
// naming both when the folder does not exist.
std::filesystem::path share_dir();

// The source tree a build folder was configured from (share/salt/source, a link
// that only build folders have): for tests and benches, which read fixtures and
// reference scripts. Throws UsageError in an installed salt.
std::filesystem::path build_source_dir();

}  // namespace salt
