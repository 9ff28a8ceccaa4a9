// The process's memory as the kernel counts it (/proc/self/status), for reports
// such as `salt shuffle`'s, whose memory budget a test checks.
#pragma once

namespace salt {

// Peak resident set size so far (VmHWM), in MiB; 0 where /proc is unavailable.
double peak_rss_mb();
// Current resident set size (VmRSS), in MiB; 0 where /proc is unavailable.
double current_rss_mb();
// Starts a new peak (VmHWM back to the current RSS, /proc/self/clear_refs); false
// where the kernel does not allow it, and VmHWM then stays the process's peak.
bool reset_peak_rss();

}  // namespace salt
