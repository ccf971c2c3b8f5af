//===- passes/registry.cpp - The registry of standard passes -------------===//
#include "passes/pass.h"

namespace tessera::passes {

bool PassInfo::declares(std::string_view statistic) const {
  for (const Statistic &s : statistics)
    if (s.name == statistic)
      return true;
  return false;
}

void PassRegistry::add(Factory create) {
  auto probe = create();
  const PassInfo &info = probe->info();
  std::string name(info.name);
  entries_[name] = Entry{name, std::string(info.summary), std::move(create), &info};
}

const PassRegistry::Entry *PassRegistry::find(std::string_view name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

void registerStandardPasses(PassRegistry &r) {
  r.add(createInferTypesPass);
  r.add(createVerifyPass);
  r.add(createFoldConstantsPass);
  r.add(createDCEPass);
  r.add(createCSEPass);
  r.add(createSimplifyInferencePass);
  r.add(createFoldReshapeTransposePass);
  r.add(createFuseActivationsPass);
}

const PassRegistry &PassRegistry::standard() {
  static const PassRegistry registry = [] {
    PassRegistry r;
    registerStandardPasses(r);
    return r;
  }();
  return registry;
}

} // namespace tessera::passes
