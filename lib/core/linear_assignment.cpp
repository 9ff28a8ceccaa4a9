#include "core/linear_assignment.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace salt {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Solver state for a matrix with rows <= cols: dual variables u (rows), v (cols)
// and the partial matching, extended by one augmenting path per row.
class Solver {
 public:
  Solver(const std::vector<double>& cost, int64_t rows, int64_t cols)
      : c_(cost), rows_(rows), cols_(cols), u_(rows, 0), v_(cols, 0), col_of_row_(rows, -1), row_of_col_(cols, -1),
        path_(cols, -1), dist_(cols), seen_row_(rows), seen_col_(cols), unvisited_(cols) {}

  std::vector<int64_t> solve() {
    for (int64_t row = 0; row < rows_; ++row) {
      const int64_t sink = shortest_path(row);
      update_duals(row);
      augment(row, sink);
    }
    return col_of_row_;
  }

 private:
  double at(int64_t r, int64_t c) const { return c_[static_cast<size_t>(r * cols_ + c)]; }

  // Dijkstra over reduced costs from `start` (free row) to the nearest free column.
  // Every reduced cost is >= 0 thanks to the duals, so the first free column reached
  // closes a shortest augmenting path.
  int64_t shortest_path(int64_t start) {
    std::fill(seen_row_.begin(), seen_row_.end(), false);
    std::fill(seen_col_.begin(), seen_col_.end(), false);
    std::fill(dist_.begin(), dist_.end(), kInf);
    std::iota(unvisited_.begin(), unvisited_.end(), 0);
    int64_t left = cols_;
    reached_ = 0;
    int64_t row = start;
    while (true) {
      seen_row_[static_cast<size_t>(row)] = true;
      int64_t best = -1;
      double lowest = kInf;
      for (int64_t k = 0; k < left; ++k) {
        const int64_t col = unvisited_[static_cast<size_t>(k)];
        const double d = reached_ + at(row, col) - u_[static_cast<size_t>(row)] - v_[static_cast<size_t>(col)];
        if (d < dist_[static_cast<size_t>(col)]) {
          dist_[static_cast<size_t>(col)] = d;
          path_[static_cast<size_t>(col)] = row;
        }
        // Among equal distances prefer a free column: the path ends sooner.
        const double dc = dist_[static_cast<size_t>(col)];
        if (dc < lowest || (dc == lowest && row_of_col_[static_cast<size_t>(col)] < 0)) {
          lowest = dc;
          best = k;
        }
      }
      reached_ = lowest;
      const int64_t col = unvisited_[static_cast<size_t>(best)];
      seen_col_[static_cast<size_t>(col)] = true;
      unvisited_[static_cast<size_t>(best)] = unvisited_[static_cast<size_t>(--left)];
      if (row_of_col_[static_cast<size_t>(col)] < 0) return col;
      row = row_of_col_[static_cast<size_t>(col)];
    }
  }

  // Keep reduced costs >= 0 and zero along the matching.
  void update_duals(int64_t start) {
    u_[static_cast<size_t>(start)] += reached_;
    for (int64_t r = 0; r < rows_; ++r)
      if (seen_row_[static_cast<size_t>(r)] && r != start)
        u_[static_cast<size_t>(r)] += reached_ - dist_[static_cast<size_t>(col_of_row_[static_cast<size_t>(r)])];
    for (int64_t c = 0; c < cols_; ++c)
      if (seen_col_[static_cast<size_t>(c)]) v_[static_cast<size_t>(c)] -= reached_ - dist_[static_cast<size_t>(c)];
  }

  // Flip the matching along the path that ends in the free column `col`.
  void augment(int64_t start, int64_t col) {
    while (true) {
      const int64_t row = path_[static_cast<size_t>(col)];
      row_of_col_[static_cast<size_t>(col)] = row;
      std::swap(col_of_row_[static_cast<size_t>(row)], col);
      if (row == start) return;
    }
  }

  const std::vector<double>& c_;
  int64_t rows_, cols_;
  std::vector<double> u_, v_;
  std::vector<int64_t> col_of_row_, row_of_col_, path_;
  std::vector<double> dist_;
  std::vector<char> seen_row_, seen_col_;
  std::vector<int64_t> unvisited_;
  double reached_ = 0;  // distance of the last column settled
};

}  // namespace

Assignment linear_sum_assignment(const std::vector<double>& cost, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0 || static_cast<int64_t>(cost.size()) != rows * cols)
    throw std::invalid_argument("linear_sum_assignment: " + std::to_string(cost.size()) + " costs for a " +
                                std::to_string(rows) + " x " + std::to_string(cols) + " matrix");
  for (size_t i = 0; i < cost.size(); ++i)
    if (!std::isfinite(cost[i]))
      throw std::invalid_argument("linear_sum_assignment: cost at row " + std::to_string(static_cast<int64_t>(i) / cols) +
                                  ", column " + std::to_string(static_cast<int64_t>(i) % cols) + " is not finite");
  Assignment a;
  if (rows == 0 || cols == 0) return a;
  const bool transposed = rows > cols;  // the solver wants rows <= cols
  std::vector<double> t;
  if (transposed) {
    t.resize(cost.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) t[static_cast<size_t>(c * rows + r)] = cost[static_cast<size_t>(r * cols + c)];
  }
  const auto match = transposed ? Solver(t, cols, rows).solve() : Solver(cost, rows, cols).solve();
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t i = 0; i < static_cast<int64_t>(match.size()); ++i)
    pairs.emplace_back(transposed ? match[static_cast<size_t>(i)] : i, transposed ? i : match[static_cast<size_t>(i)]);
  std::sort(pairs.begin(), pairs.end());
  for (const auto& [r, c] : pairs) {
    a.rows.push_back(r);
    a.cols.push_back(c);
    a.cost += cost[static_cast<size_t>(r * cols + c)];
  }
  return a;
}

}  // namespace salt
