#include "tools/convert_command.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "convert/convert.h"
#include "ops/quantize.h"
#include "util/errors.h"

namespace strata {
namespace {

constexpr char kConvertUsage[] =
    "usage: strata convert SRC DST --to T [--scale-layout row_major] "
    "[--only REGEX] [--skip REGEX] [--max-shard-size SIZE] [--overwrite] "
    "[--quiet]\n"
    "  (T bfloat16|float16|float32 or a block-scaled format; DST ending in "
    ".gguf writes GGUF, else a Hugging Face directory)\n";

std::atomic<bool> interrupted{false};
volatile sig_atomic_t caught_signal = 0;

void OnSignal(int signal) {
  caught_signal = signal;
  interrupted.store(true, std::memory_order_relaxed);
}

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

void InstallHandlers() {
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  for (int s : kSignals) sigaction(s, &action, nullptr);
}

// After the temporary files are gone: end as the signal would have.
void ReraiseCaughtSignal() {
  const int s = caught_signal;
  if (s == 0) return;
  signal(s, SIG_DFL);
  raise(s);
}

std::string Bytes(double b) {
  if (b >= 1e9) return absl::StrFormat("%.2f GB", b / 1e9);
  if (b >= 1e6) return absl::StrFormat("%.1f MB", b / 1e6);
  return absl::StrFormat("%.0f kB", b / 1e3);
}

std::string Clock(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

// The progress bar: redrawn at most 10 times a second.
class Bar {
 public:
  Bar() : start_(std::chrono::steady_clock::now()) {}
  void Draw(const WriteProgress& p, bool last = false) {
    const auto now = std::chrono::steady_clock::now();
    if (!last && now - drawn_ < std::chrono::milliseconds(100)) return;
    drawn_ = now;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = seconds > 0 ? p.bytes_done / seconds : 0;
    const double fraction =
        p.bytes_total > 0 ? static_cast<double>(p.bytes_done) / p.bytes_total
                          : 1.0;
    constexpr int kWidth = 28;
    const int filled = static_cast<int>(fraction * kWidth);
    std::string bar(filled, '#');
    bar.append(kWidth - filled, '-');
    const double left = rate > 0 ? (p.bytes_total - p.bytes_done) / rate : 0.0;
    std::cerr << absl::StrFormat(
        "\r[%s] %d/%d tensors  %s/%s  %.0f MB/s  %s left \x1b[K", bar,
        p.tensors_done, p.tensors_total, Bytes(p.bytes_done),
        Bytes(p.bytes_total), rate / 1e6, Clock(left));
    if (last) std::cerr << "\n";
    std::cerr.flush();
  }

 private:
  std::chrono::steady_clock::time_point start_, drawn_;
};

}  // namespace

int ConvertCommand(const std::vector<std::string>& args) {
  if (args.size() < 2) {
    std::cerr << kConvertUsage;
    return 2;
  }
  ConvertOptions options;
  options.to.clear();
  bool quiet = false, have_only = false, have_skip = false, have_size = false;
  for (size_t i = 2; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if (a == "--overwrite" && !options.overwrite) {
      options.overwrite = true;
    } else if (a == "--quiet" && !quiet) {
      quiet = true;
    } else if (a == "--to" && has_value && options.to.empty()) {
      options.to = args[++i];
    } else if (a == "--only" && has_value && !have_only) {
      options.only = args[++i];
      have_only = true;
    } else if (a == "--skip" && has_value && !have_skip) {
      options.skip = args[++i];
      have_skip = true;
    } else if (a == "--scale-layout" && has_value &&
               !options.scale_layout.has_value()) {
      const std::string& name = args[++i];
      if (name == ScaleLayoutName(ScaleLayout::kRowMajor)) {
        options.scale_layout = ScaleLayout::kRowMajor;
      } else if (name == ScaleLayoutName(ScaleLayout::kSwizzled128x4)) {
        options.scale_layout = ScaleLayout::kSwizzled128x4;
      } else {
        std::cerr << "strata convert: --scale-layout \"" << name
                  << "\" is not row_major or swizzled_128x4\n";
        return 2;
      }
    } else if (a == "--max-shard-size" && has_value && !have_size) {
      absl::StatusOr<int64_t> size = ParseShardSize(args[++i]);
      if (!size.ok()) {
        std::cerr << FormatError(size.status()) << "\n";
        return 2;
      }
      options.max_shard_size = *size;
      have_size = true;
    } else {
      std::cerr << kConvertUsage;
      return 2;
    }
  }
  if (options.to.empty()) {
    std::cerr << kConvertUsage;
    return 2;
  }
  const bool tty = isatty(STDERR_FILENO) == 1;
  Bar bar;
  std::optional<WriteProgress> last;
  if (!quiet && tty) {
    options.control.progress = [&](const WriteProgress& p) {
      last = p;
      bar.Draw(p);
    };
  }
  if (!quiet && !tty) {
    options.control.file_written = [](const std::string& path) {
      std::cout << "wrote " << path << std::endl;
    };
  }
  options.control.cancel = &interrupted;
  InstallHandlers();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<ConvertReport> report =
      ConvertCheckpoint(args[0], args[1], options);
  if (last.has_value()) bar.Draw(*last, /*last=*/true);
  if (!report.ok()) {
    std::cerr << FormatError(report.status()) << "\n";
    ReraiseCaughtSignal();
    return 2;
  }
  for (const auto& [name, status] : report->refused) {
    std::cerr << name << ": " << FormatError(status) << "\n";
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::cout << absl::StrFormat(
      "converted %d, copied %d, refused %d; %d bytes in %.2f s (%.0f MB/s of "
      "input)\n",
      report->converted.size(), report->copied.size(), report->refused.size(),
      report->output_bytes, seconds,
      seconds > 0 ? report->input_bytes / seconds / 1e6 : 0.0);
  return report->refused.empty() ? 0 : 1;
}

}  // namespace strata
