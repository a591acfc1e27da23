#include "report.h"

#include <fmt/format.h>

#include <stdexcept>

namespace scuda::bench {

namespace {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// Three significant digits are as many as a median of noisy samples has.
std::string number(double v) { return fmt::format("{:.3g}", v); }

}  // namespace

void Report::add(const std::string& key, double value, size_t samples) {
  figures_.push_back({key, value, samples});
}

void Report::add_ratio(const std::string& ratio_key, const std::string& key,
                       const std::string& raw_key) {
  add(ratio_key, figure(key) / figure(raw_key), 0);
}

void Report::add_meta(const std::string& key, const std::string& value) {
  meta_.emplace_back(key, value);
}

double Report::figure(const std::string& key) const {
  for (const Figure& f : figures_)
    if (f.key == key) return f.value;
  throw std::logic_error("no figure " + key);
}

std::string Report::json() const {
  std::string out = "{\n";
  for (const Figure& f : figures_) out += fmt::format("  {}: {:.6g},\n", quoted(f.key), f.value);
  out += "  \"samples\": {";
  const char* sep = "";
  for (const Figure& f : figures_) {
    if (f.samples == 0) continue;
    out += fmt::format("{}{}: {}", sep, quoted(f.key), f.samples);
    sep = ", ";
  }
  out += "},\n  \"meta\": {";
  sep = "";
  for (const auto& [key, value] : meta_) {
    out += fmt::format("{}{}: {}", sep, quoted(key), quoted(value));
    sep = ", ";
  }
  return out + "}\n}\n";
}

std::string Report::markdown(const std::vector<Row>& rows, const Columns& columns) const {
  std::string out = fmt::format("| figure | {} | {} | {} |\n|---|---:|---:|---:|\n", columns.key,
                                columns.raw_key, columns.ratio_key);
  for (const Row& r : rows) {
    const bool paired = !r.raw_key.empty();
    out += fmt::format("| {} (`{}`) | {} | {} | {} |\n", r.label, r.key, number(figure(r.key)),
                       paired ? number(figure(r.raw_key)) : "—",
                       paired ? number(figure(r.ratio_key)) : "—");
  }
  return out;
}

}  // namespace scuda::bench
