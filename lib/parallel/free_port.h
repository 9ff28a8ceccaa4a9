// A TCP port that is free on this machine right now (the kernel picks it), for a
// rendezvous on loopback. Another process could take it before rank 0 binds it;
// that rare case fails with a clear "could not join" error and a rerun fixes it.
#pragma once

namespace salt::parallel {

int free_local_port();  // InputError when no socket can be bound

// Whether a server could listen on `port` of every interface now (as the rendezvous
// store on rank 0 will, with SO_REUSEADDR): false when another process holds it.
bool port_is_free(int port);

}  // namespace salt::parallel
