// The figures of one run, written as JSON and as a markdown table.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace scuda::bench {

struct Figure {
  std::string key;
  double value = 0;
  size_t samples = 0;  // 0 for a ratio of two other figures
};

// One table row: a scuda figure, its raw-TCP counterpart ("" if none) and
// the key under which their ratio, scuda / raw, is stored.
struct Row {
  std::string label;
  std::string key;
  std::string raw_key;
  std::string ratio_key;
};

// A table's column heads: the figure, its counterpart, their ratio.
struct Columns {
  std::string key = "scuda";
  std::string raw_key = "raw TCP";
  std::string ratio_key = "scuda / raw";
};

class Report {
 public:
  void add(const std::string& key, double value, size_t samples);
  // Stores figure(key) / figure(raw_key) under ratio_key.
  void add_ratio(const std::string& ratio_key, const std::string& key, const std::string& raw_key);
  void add_meta(const std::string& key, const std::string& value);
  double figure(const std::string& key) const;

  std::string json() const;
  std::string markdown(const std::vector<Row>& rows, const Columns& columns = {}) const;

 private:
  std::vector<Figure> figures_;
  std::vector<std::pair<std::string, std::string>> meta_;
};

}  // namespace scuda::bench
