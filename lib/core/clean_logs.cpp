#include "core/clean_logs.h"

#include <algorithm>
#include <system_error>

#include "core/errors.h"
#include "core/remove_tree.h"

namespace salt {

namespace fs = std::filesystem;

CleanLogsResult delete_dirs_without_subdir(const fs::path& folder, const std::string& subdirectory) {
  if (subdirectory.empty() || subdirectory == "." || subdirectory == ".." || subdirectory.find('/') != std::string::npos)
    throw InputError("clean_logs: --subdirectory must be a plain directory name, not '" + subdirectory + "'");
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    throw InputError("clean_logs: --folder_path " + folder.string() + " is not a directory");
  std::vector<fs::path> entries;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) entries.push_back(it->path());
  if (ec) throw InputError("clean_logs: cannot list " + folder.string() + ": " + ec.message());
  std::sort(entries.begin(), entries.end());
  CleanLogsResult result;
  for (const auto& entry : entries) {
    const auto status = fs::symlink_status(entry, ec);
    if (fs::is_symlink(status)) {
      // salt's is_dir() follows the link, then rmtree refuses it: never delete through a link.
      if (fs::is_directory(entry, ec)) result.links.push_back(entry);
      continue;
    }
    if (!fs::is_directory(status) || fs::is_directory(entry / subdirectory, ec)) continue;
    if (!remove_tree(entry, ec)) throw InputError("clean_logs: cannot delete " + entry.string() + ": " + ec.message());
    result.deleted.push_back(entry);
  }
  return result;
}

}  // namespace salt
