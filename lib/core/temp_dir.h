// Where salt-cpp writes its temporary files: the folder the environment names, as
// std::filesystem::temp_directory_path reads it, but one that is not there is
// refused by name (before: "salt: error: : No such file or directory").
#pragma once
#include <filesystem>

namespace salt {

// The first of TMPDIR, TMP, TEMP, TEMPDIR that is set and not empty, else /tmp.
// InputError naming the variable and its value when that is not a folder.
std::filesystem::path temp_directory();

}  // namespace salt
