// The process's memory as the kernel counts it (/proc/self/status), for reports
// such as `salt shuffle`'s, whose memory budget a test checks.
#pragma once

#include <string>

namespace salt {

// Peak resident set size so far (VmHWM), in MiB; 0 where /proc is unavailable.
double peak_rss_mb();
// Current resident set size (VmRSS), in MiB; 0 where /proc is unavailable.
double current_rss_mb();
// Private writable memory mapped now (VmData), in MiB; 0 where /proc is unavailable.
double mapped_data_mb();
// Starts a new peak (VmHWM back to the current RSS, /proc/self/clear_refs); false
// where the kernel does not allow it, and VmHWM then stays the process's peak.
bool reset_peak_rss();

// For a command that computes: memory it frees stays in the process for the next
// allocation instead of going back to the kernel. glibc maps every allocation above
// 32 MiB afresh and unmaps it when freed (a GN2 batch of 1000 has ~250k edges x 128
// floats per layer): each step faulted those pages in and zeroed them again, a
// measurable part of a CPU step (docs/performance.md). The process keeps its peak
// resident.
void keep_freed_memory();

// This machine's physical memory in bytes; 0 where unknown.
double physical_memory_bytes();
// A size for messages: "512 bytes", "127.0 KiB", "12.3 GiB".
std::string bytes_text(double bytes);
// Whether a library's message is an allocator's refusal (LibTorch's CPU "can't
// allocate memory: you tried to allocate N bytes", CUDA's "out of memory. Tried to
// allocate 4.88 GiB"); `size`, if given, gets the amount asked for ("238.4 GiB"), or
// "" where the message names none.
bool allocation_failure(const std::string& what, std::string* size = nullptr);

}  // namespace salt
