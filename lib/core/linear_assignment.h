// The linear sum assignment problem, solved exactly: for a rows x cols cost
// matrix, pick min(rows, cols) entries, at most one per row and per column, with
// the smallest total cost. MaskFormer's HungarianMatcher solves one per jet (true
// objects x object queries), as salt does with scipy's linear_sum_assignment.
//
// The algorithm is the shortest-augmenting-path form of the Hungarian method
// (Jonker-Volgenant; Crouse 2016 for rectangular matrices): one Dijkstra-like
// search per row over reduced costs, O(rows^2 cols).
#pragma once
#include <cstdint>
#include <vector>

namespace salt {

struct Assignment {
  std::vector<int64_t> rows, cols;  // matched pairs, rows ascending
  double cost = 0;                  // sum of cost(rows[k], cols[k])
};

// `cost` is row-major, rows x cols, every entry finite (throws std::invalid_argument
// otherwise: a NaN would make the optimum meaningless).
Assignment linear_sum_assignment(const std::vector<double>& cost, int64_t rows, int64_t cols);

}  // namespace salt
