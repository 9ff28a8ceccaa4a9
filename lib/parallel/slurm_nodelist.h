// Slurm's compressed host lists, as in SLURM_JOB_NODELIST: "node[01-04,07],gpu3"
// names node01 node02 node03 node04 node07 gpu3. Ranges keep their zero padding
// ("[08-10]" -> 08 09 10), several bracket groups in one name multiply
// ("r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2). The first host runs rank 0 under srun,
// so it is the rendezvous address.
#pragma once
#include <string>
#include <vector>

namespace salt::parallel {

// Every host, in Slurm's order. InputError (naming `what`, e.g. the variable) on
// unbalanced brackets, bad ranges or an empty list.
std::vector<std::string> expand_nodelist(const std::string& list, const std::string& what = "node list");

// The first host of the list (without expanding the rest).
std::string first_host(const std::string& list, const std::string& what = "node list");

}  // namespace salt::parallel
