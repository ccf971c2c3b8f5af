//===- passes/pass_manager.cpp - Pipelines and instrumentation -----------===//
#include "passes/pass_manager.h"

#include "ir/printer.h"
#include "support/log.h"

#include <fmt/format.h>

#include <chrono>
#include <iostream>

namespace tessera::passes {

Expected<PassManager> PassManager::fromPipeline(std::string_view pipeline,
                                                const PassRegistry &registry,
                                                PassManagerOptions options) {
  PassManager pm(std::move(options));
  size_t pos = 0;
  while (pos <= pipeline.size()) {
    size_t comma = pipeline.find(',', pos);
    if (comma == std::string_view::npos)
      comma = pipeline.size();
    std::string_view name = pipeline.substr(pos, comma - pos);
    while (!name.empty() && name.front() == ' ')
      name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ')
      name.remove_suffix(1);
    if (!name.empty()) {
      const auto *entry = registry.find(name);
      if (!entry) {
        std::string known;
        for (const auto &[n, e] : registry.entries())
          known += (known.empty() ? "" : ", ") + n;
        return Error::format("unknown pass '{}' in pipeline '{}' (known passes: {})", name,
                             pipeline, known);
      }
      pm.add(entry->create());
    }
    pos = comma + 1;
  }
  for (const auto &name : pm.options_.printAfter)
    if (!registry.find(name))
      return Error::format("--print-after names unknown pass '{}'", name);
  return pm;
}

Status PassManager::run(ir::Module &m, std::ostream *irOut) {
  std::ostream &out = irOut ? *irOut : std::cerr;
  records_.clear();
  for (auto &pass : passes_) {
    Record record;
    record.pass = std::string(pass->name());
    PassContext ctx;
    ctx.setStats(&record.stats);
    TS_LOG_DEBUG("running pass '{}'", record.pass);
    auto start = std::chrono::steady_clock::now();
    Status s = pass->run(m, ctx);
    record.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!s.ok())
      return std::move(s).withContext(fmt::format("while running pass '{}'", record.pass));
    for (const auto &[counter, value] : record.stats) {
      if (!pass->info().declares(counter))
        return Error::format("internal error: pass '{}' counted '{}', a statistic its PassInfo "
                             "does not declare",
                             record.pass, counter);
      TS_LOG_DEBUG("  {}: {} = {}", record.pass, counter, value);
    }
    if (options_.verifyEach) {
      Status v = verifyModule(m);
      if (!v.ok())
        return std::move(v).withContext(
            fmt::format("verifier failed after pass '{}'", record.pass));
    }
    if (options_.printAfterAll || options_.printAfter.count(record.pass)) {
      out << "# ---- IR after " << record.pass << " ----\n";
      ir::printModule(m, out);
    }
    records_.push_back(std::move(record));
  }
  return okStatus();
}

void PassManager::printReport(std::ostream &os) const {
  if (options_.timePasses) {
    double total = 0;
    for (const auto &r : records_)
      total += r.seconds;
    os << "===- Pass execution timing report -===\n";
    os << fmt::format("  Total: {:.4f} s\n", total);
    os << fmt::format("  {:>10}  {:>6}  {}\n", "wall (s)", "%", "pass");
    for (const auto &r : records_)
      os << fmt::format("  {:>10.4f}  {:>5.1f}%  {}\n", r.seconds,
                        total > 0 ? 100.0 * r.seconds / total : 0.0, r.pass);
  }
  if (options_.stats) {
    os << "===- Pass statistics -===\n";
    for (const auto &r : records_)
      for (const auto &[counter, value] : r.stats)
        os << fmt::format("  {:>8}  {} - {}\n", value, r.pass, counter);
  }
}

} // namespace tessera::passes
