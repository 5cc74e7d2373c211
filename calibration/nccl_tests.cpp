// nccl-tests output: the format is described in nccl_tests.hpp.
#include "calibration/nccl_tests.hpp"
#include "calibration/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>

namespace dtsim::calibration {
namespace {

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;)
    out.push_back(w);
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::optional<double> to_number(const std::string& s) {
  try {
    std::size_t used = 0;
    const double v = std::stod(s, &used);
    if (used != s.size() || !std::isfinite(v)) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool is_whole_number(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The columns a data row has, by name, as the header line lists them.
struct Columns {
  std::size_t line = 0;
  std::size_t count = 0;
  std::optional<std::size_t> size, elements, type, redop, root;
  std::vector<std::size_t> time, algbw, busbw, wrong; // out-of-place first, then in-place
  bool wrong_is_count = true;                         // "#wrong" (a count); older versions print "error" (a value)
};

Columns read_header(const std::vector<std::string>& names, std::size_t line) {
  Columns c;
  c.line = line;
  c.count = names.size();
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    if (n == "size") c.size = i;
    if (n == "count") c.elements = i;
    if (n == "type") c.type = i;
    if (n == "redop") c.redop = i;
    if (n == "root") c.root = i;
    if (n == "time") c.time.push_back(i);
    if (n == "algbw") c.algbw.push_back(i);
    if (n == "busbw") c.busbw.push_back(i);
    if (n == "#wrong" || n == "wrong") c.wrong.push_back(i);
    if (n == "error") {
      c.wrong.push_back(i);
      c.wrong_is_count = false;
    }
  }
  return c;
}

class Parser {
public:
  explicit Parser(const std::string& origin) : origin_(origin) {}

  std::vector<NcclTestsRun> parse(const std::string& text) {
    std::istringstream in(text);
    std::string raw;
    while (std::getline(in, raw)) {
      ++line_;
      const std::string l = trim(raw);
      if (l.empty()) continue;
      if (l[0] == '#')
        comment(trim(l.substr(1)));
      else
        data(l);
    }
    finish();
    if (runs_.empty())
      throw CalibrationError(origin_, "",
                             "no nccl-tests data rows found (expected lines such as \"     8388608  "
                             "2097152  float  sum  -1  571.9  14.67  27.50  0  ...\" after a \"#  size  "
                             "count  type ...\" header)");
    return runs_;
  }

private:
  [[noreturn]] void fail(const std::string& message) const {
    throw CalibrationError(origin_, fmt::format("line {}", line_), message);
  }

  void start_new() {
    finish();
    run_ = {};
    columns_.reset();
    rank_lines_ = 0;
  }

  // The run so far, if it has rows (a marker echoed by a job script without a test after it is dropped).
  void finish() {
    if (run_.rows.empty()) return;
    if (rank_lines_ > 0)
      run_.ranks = rank_lines_;
    else if (run_.threads > 0 && run_.gpus > 0)
      run_.ranks = run_.threads * run_.gpus;
    runs_.push_back(run_);
    run_ = {};
    columns_.reset();
    rank_lines_ = 0;
  }

  void comment(const std::string& c) {
    static const std::string starting = "Collective test starting:";
    static const std::regex rank(
        R"(^Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+\S+\s+device\s+\d+\s+\[[^\]]*\]\s*(.*)$)");
    static const std::regex out_of_bounds(R"(^Out of bounds values\s*:\s*(\d+))");
    static const std::regex average(R"(^Avg bus bandwidth\s*:\s*(\S+))");
    std::smatch m;
    if (c.starts_with(starting)) {
      if (!run_.rows.empty() || !run_.test.empty() || run_.threads > 0) start_new();
      run_.test = trim(c.substr(starting.size()));
      run_.operation = run_.test;
      for (const char* suffix : {"_perf_mpi", "_perf"})
        if (run_.operation.ends_with(suffix)) {
          run_.operation.resize(run_.operation.size() - std::string(suffix).size());
          break;
        }
    } else if (c.starts_with("nThread ")) {
      if (!run_.rows.empty() || run_.threads > 0) start_new();
      const auto w = words(c);
      // A count of threads or GPUs: a whole number an int holds, else the header is not nccl-tests' (the fuzzer gave
      // 7.8e12, whose conversion to int is undefined).
      const auto count = [&](const std::string& word) {
        const auto v = to_number(word).value_or(0);
        if (!(v >= 0 && v <= 1e9) || v != std::floor(v))
          fail(fmt::format("\"{}\" in \"{}\" is not a thread or GPU count", word, trim(c)));
        return static_cast<int>(v);
      };
      for (std::size_t i = 0; i + 1 < w.size(); ++i) {
        if (w[i] == "nThread") run_.threads = count(w[i + 1]);
        if (w[i] == "nGpus") run_.gpus = count(w[i + 1]);
      }
    } else if (std::regex_match(c, m, rank)) {
      if (rank_lines_++ == 0) run_.device = trim(m[1]);
    } else if (std::regex_search(c, m, out_of_bounds)) {
      if (std::stol(m[1]) != 0)
        fail(fmt::format("{} values out of bounds: the test found wrong results, and a broken run must not report "
                         "a time",
                         m[1].str()));
    } else if (std::regex_search(c, m, average)) {
      if (const auto v = to_number(m[1])) run_.average_busbw = *v * 1e9;
    } else {
      const auto w = words(c);
      if (std::find(w.begin(), w.end(), "size") != w.end() && std::find(w.begin(), w.end(), "time") != w.end()) {
        if (!run_.rows.empty()) start_new(); // a second table without its own parameter line
        columns_ = read_header(w, line_);
        if (!columns_->size || columns_->time.empty() || columns_->algbw.size() != columns_->time.size() ||
            columns_->busbw.size() != columns_->time.size())
          fail(fmt::format("expected a column header with size, time, algbw and busbw (out-of-place, and in-place), "
                           "got \"{}\"",
                           c));
      } else if (!w.empty() && w[0] == "(B)") {
        time_scale_ = std::find(w.begin(), w.end(), "(ms)") != w.end() ? 1e-3 : 1e-6;
      }
    }
  }

  void data(const std::string& l) {
    const auto w = words(l);
    if (w.empty() || !is_whole_number(w[0])) return; // NCCL INFO lines, MPI chatter
    if (!columns_) fail("a data row before the column header (\"#  size  count  type ... time  algbw  busbw ...\")");
    const Columns& c = *columns_;
    if (w.size() != c.count)
      fail(fmt::format("expected {} columns, as the header at line {} names them, got {}", c.count, c.line, w.size()));
    const auto number = [&](std::size_t i, const char* what) {
      const auto v = to_number(w[i]);
      if (!v || *v < 0) fail(fmt::format("expected a number >= 0 for {} (column {}), got \"{}\"", what, i + 1, w[i]));
      return *v;
    };
    const auto check_wrong = [&](std::size_t k, const char* where) {
      if (k >= c.wrong.size() || !c.wrong_is_count || w[c.wrong[k]] == "N/A") return;
      const double wrong = number(c.wrong[k], "#wrong");
      if (wrong != 0)
        fail(fmt::format("#wrong is {} ({}): the test found wrong results, and a broken run must not report a time",
                         w[c.wrong[k]], where));
    };
    NcclTestsRow row;
    row.bytes = number(*c.size, "size");
    if (c.elements) row.count = number(*c.elements, "count");
    if (c.type) row.type = w[*c.type];
    if (c.redop) row.redop = w[*c.redop];
    if (c.root) row.root = static_cast<int>(to_number(w[*c.root]).value_or(-1));
    row.time = number(c.time[0], "time") * time_scale_;
    row.algbw = number(c.algbw[0], "algbw") * 1e9;
    row.busbw = number(c.busbw[0], "busbw") * 1e9;
    check_wrong(0, "out-of-place");
    if (c.time.size() >= 2 && w[c.time[1]] != "N/A") {
      row.in_place = true;
      row.time_in_place = number(c.time[1], "time") * time_scale_;
      row.algbw_in_place = number(c.algbw[1], "algbw") * 1e9;
      row.busbw_in_place = number(c.busbw[1], "busbw") * 1e9;
      check_wrong(1, "in-place");
    }
    run_.rows.push_back(row);
  }

  const std::string& origin_;
  std::size_t line_ = 0;
  NcclTestsRun run_;
  std::optional<Columns> columns_;
  int rank_lines_ = 0;
  double time_scale_ = 1e-6; // microseconds, as nccl-tests prints
  std::vector<NcclTestsRun> runs_;
};

// nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md) for an operation over n ranks; 0 if unknown.
double busbw_factor(const std::string& op, int n) {
  if (n <= 0) return 0;
  const double ranks = n;
  if (op == "all_reduce") return 2 * (ranks - 1) / ranks;
  if (op == "all_gather" || op == "reduce_scatter" || op == "alltoall" || op == "all_to_all")
    return (ranks - 1) / ranks;
  if (op == "broadcast" || op == "reduce" || op == "sendrecv" || op == "hypercube") return 1;
  return 0;
}

} // namespace

std::vector<NcclTestsRun> parse_nccl_tests(const std::string& text, const std::string& origin) {
  return Parser(origin).parse(text);
}

std::vector<NcclTestsRun> load_nccl_tests(const std::string& path) {
  return parse_nccl_tests(read_input_file(path, "nccl-tests output"), path);
}

NcclTestsFit fit_nccl_tests(const NcclTestsRun& run, std::optional<double> link_bandwidth, const std::string& origin) {
  std::vector<TimedSample> samples;
  double largest = 0;
  for (const auto& r : run.rows) {
    if (r.bytes <= 0 || r.time <= 0) continue;
    samples.push_back({r.bytes, r.time});
    if (r.in_place && r.time_in_place > 0) samples.push_back({r.bytes, r.time_in_place});
    largest = std::max(largest, r.bytes);
  }
  NcclTestsFit fit;
  try {
    fit.cost = fit_alpha_beta(samples);
  } catch (const std::invalid_argument& e) {
    throw CalibrationError(origin, run.test.empty() ? "" : run.test,
                           fmt::format("cannot fit alpha and beta: {}", e.what()));
  }
  // The plateau: the largest size's bus bandwidth, out-of-place and in-place averaged.
  double sum = 0, algbw = 0;
  int n = 0;
  for (const auto& r : run.rows) {
    if (r.bytes != largest) continue;
    sum += r.busbw;
    algbw += r.algbw;
    ++n;
    if (r.in_place) {
      sum += r.busbw_in_place;
      algbw += r.algbw_in_place;
      ++n;
    }
  }
  fit.plateau_bytes = largest;
  fit.plateau_busbw = n > 0 ? sum / n : 0;
  fit.busbw_factor = busbw_factor(run.operation, run.ranks);
  if (fit.busbw_factor == 0 && algbw > 0) fit.busbw_factor = sum / algbw; // as the output's own columns say
  if (link_bandwidth && *link_bandwidth > 0) fit.protocol_efficiency = fit.plateau_busbw / *link_bandwidth;
  return fit;
}

} // namespace dtsim::calibration
