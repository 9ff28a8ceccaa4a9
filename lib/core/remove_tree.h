// Removing a directory tree without std::filesystem::remove_all: pip's LibTorch
// (torch 2.11, libtorch.so) exports its own copy of that function, which the
// dynamic linker binds ahead of libstdc++'s and which calls address 0 (bench_loader
// crashed there on the GPU machine). Every removal of a tree in salt-cpp
// goes through here; tests/core/remove_tree_test.cpp holds that rule.
#pragma once
#include <filesystem>
#include <system_error>

namespace salt {

// Removes `path` and, for a directory, everything below it; symbolic links are
// removed, never followed. A path that does not exist is no error. Returns false
// and sets `ec` on the first entry that cannot be removed.
bool remove_tree(const std::filesystem::path& path, std::error_code& ec);

// The same; a failure throws std::filesystem::filesystem_error naming the path.
void remove_tree(const std::filesystem::path& path);

}  // namespace salt
