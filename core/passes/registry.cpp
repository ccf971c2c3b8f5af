//===- passes/registry.cpp - The registry of standard passes -------------===//
#include "passes/pass.h"

namespace tessera::passes {

void PassRegistry::add(Factory create) {
  auto probe = create();
  std::string name(probe->name());
  entries_[name] = Entry{name, std::string(probe->description()), std::move(create)};
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
