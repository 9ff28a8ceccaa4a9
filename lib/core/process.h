// Whether a process that wrote a file (a temp copy, a temp checkpoint) is still
// alive, so its leftovers can be removed only once it is gone.
#pragma once

namespace salt {

// Start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat),
// which tells a live owner from a later process that reused its pid. 0 if unknown.
unsigned long long process_start(long pid);

// pid runs on this host (and, when start != 0, is the process that started then).
bool process_alive(long pid, unsigned long long start = 0);

}  // namespace salt
