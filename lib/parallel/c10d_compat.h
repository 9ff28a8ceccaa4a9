// The only place that knows how torch's c10d differs between LibTorch 1.13 (Debian,
// CI) and 2.x (pip, GPU machines). Included by .cpp files of lib/parallel only: the
// c10d and Gloo headers are heavy and must not leak into the rest of salt-cpp.
//
// What differs, and what does not:
// - 1.13: ProcessGroupGloo/NCCL derive from c10d::ProcessGroup, which has the
//   collectives. 2.x: they derive from c10d::Backend (ProcessGroup became a
//   dispatcher over backends), and Backend has the same collectives
//   (allreduce/broadcast taking std::vector<at::Tensor>&, returning
//   c10::intrusive_ptr<c10d::Work>). We use the backend object directly in both.
// - c10d::Work (Work.hpp), TCPStore(host, TCPStoreOptions), PrefixStore, the
//   Gloo/NCCL Options::create and their constructors (store, rank, size, options)
//   are the same in both. TCPStoreOptions::numWorkers is c10::optional in 1.13 and
//   std::optional in recent 2.x: assigned, never named.
// - The 2.x branches below are written from torch 2.x's public headers but have not
//   been compiled here (no LibTorch 2.x in CI).
//
// Gloo and NCCL are behind the macros torch's own headers test (USE_C10D_GLOO,
// USE_C10D_NCCL). Every Linux LibTorch has Gloo, so it is switched on when its
// headers are found (pip's LibTorch ships none: CMake's SALT_GLOO_INCLUDE_DIR names
// a copy, and parallel/backends.h says what a build lacks); NCCL only when the build
// defines USE_C10D_NCCL and nccl.h is on the include path (see docs/distributed.md),
// otherwise CUDA tensors are reduced over Gloo through host memory.
#pragma once
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <type_traits>
#include <utility>

#include "core/torch_compat.h"

#if __has_include(<gloo/algorithm.h>)
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#define SALT_HAVE_GLOO 1
#else
#define SALT_HAVE_GLOO 0
#endif

#if defined(USE_C10D_NCCL) && __has_include(<nccl.h>)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#define SALT_HAVE_NCCL 1
#else
#define SALT_HAVE_NCCL 0
#endif

#if SALT_TORCH_AT_LEAST(2, 0)
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace salt::parallel::compat {

// The object that runs collectives: ProcessGroup in 1.13, Backend in 2.x.
#if SALT_TORCH_AT_LEAST(2, 0)
using CollectiveBackend = c10d::Backend;
#else
using CollectiveBackend = c10d::ProcessGroup;
#endif

using Work = c10d::Work;

// TCPStoreOptions::useLibUV (LibTorch 2.x, true by default in recent releases) is
// refused by a LibTorch built without libuv (Debian's 2.6, for one). Detected from
// the options struct rather than a version number; 1.13 has no such member.
template <class Options, class = void>
struct HasUseLibUV : std::false_type {};
template <class Options>
struct HasUseLibUV<Options, std::void_t<decltype(std::declval<Options&>().useLibUV)>> : std::true_type {};

// A template so that the branch naming useLibUV is discarded on LibTorch 1.13.
template <class Options>
c10::intrusive_ptr<c10d::Store> construct_tcp_store(const std::string& host, Options opts) {
  if constexpr (HasUseLibUV<Options>::value) {
    try {
      return c10::make_intrusive<c10d::TCPStore>(host, opts);
    } catch (const c10::Error& e) {
      // Without libuv in this build: the classic socket backend serves the same protocol.
      if (!opts.useLibUV || std::string(e.what()).find("libuv") == std::string::npos) throw;
      opts.useLibUV = false;
    }
  }
  return c10::make_intrusive<c10d::TCPStore>(host, opts);
}

inline c10::intrusive_ptr<c10d::Store> make_tcp_store(const std::string& host, int port, bool is_server, int world,
                                                      std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(port);
  opts.isServer = is_server;
  opts.numWorkers = static_cast<std::size_t>(world);
  opts.waitWorkers = false;  // the Gloo/NCCL rendezvous waits for everyone, with our timeout
  opts.timeout = timeout;
  return construct_tcp_store(host, opts);
}

inline c10::intrusive_ptr<c10d::Store> prefixed(const std::string& prefix, const c10::intrusive_ptr<c10d::Store>& store) {
  return c10::make_intrusive<c10d::PrefixStore>(prefix, store);
}

#if SALT_HAVE_GLOO
// `interface` (GLOO_SOCKET_IFNAME) wins; a loopback master means a one-machine run;
// otherwise Gloo binds to the address this machine's hostname resolves to.
inline c10::intrusive_ptr<CollectiveBackend> make_gloo(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world,
                                                       std::chrono::milliseconds timeout, const std::string& interface,
                                                       bool loopback) {
  auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
  if (!interface.empty())
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
  else if (loopback)
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  else
    opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  opts->threads = 2;  // Gloo's worker threads run the asynchronous collectives
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, opts);
}
#endif

#if SALT_HAVE_NCCL
inline c10::intrusive_ptr<CollectiveBackend> make_nccl(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world,
                                                       std::chrono::milliseconds timeout) {
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world, opts);
}
#endif

inline c10d::AllreduceOptions sum_options(std::chrono::milliseconds timeout) {
  c10d::AllreduceOptions o;
  o.reduceOp = c10d::ReduceOp::SUM;
  o.timeout = timeout;
  return o;
}

inline c10d::BroadcastOptions broadcast_options(int root, std::chrono::milliseconds timeout) {
  c10d::BroadcastOptions o;
  o.rootRank = root;
  o.rootTensor = 0;
  o.timeout = timeout;
  return o;
}

inline std::vector<uint8_t> to_bytes(const std::string& s) { return {s.begin(), s.end()}; }
inline std::string from_bytes(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

}  // namespace salt::parallel::compat
