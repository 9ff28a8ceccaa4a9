// A classification task's confusion matrix: counts of (true class, predicted
// class = argmax) pairs, drawn as a heat map coloured by the fraction of each true
// class (row), with the fraction and the count in each cell.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace salt::plot {

struct ConfusionMatrix {
  std::vector<std::string> classes;
  std::vector<int64_t> counts;  // row-major: [true][predicted]
  explicit ConfusionMatrix(std::vector<std::string> names)
      : classes(std::move(names)), counts(classes.size() * classes.size(), 0) {}
  int64_t& at(std::size_t truth, std::size_t predicted) { return counts[truth * classes.size() + predicted]; }
  int64_t at(std::size_t truth, std::size_t predicted) const { return counts[truth * classes.size() + predicted]; }
  int64_t row_total(std::size_t truth) const;
};

// `<stem>.png` and `<stem>.pdf`; `title` above the matrix.
std::vector<std::filesystem::path> save_confusion_matrix(const ConfusionMatrix& m, const std::string& title,
                                                         const std::filesystem::path& stem);
// The PNG's bytes (TensorBoard image summary).
std::string confusion_matrix_png(const ConfusionMatrix& m, const std::string& title);
// A markdown table of the counts (TensorBoard text).
std::string confusion_matrix_markdown(const ConfusionMatrix& m);

}  // namespace salt::plot
