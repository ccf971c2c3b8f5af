# lit configuration for Tessera's text-IR tests.
#
# Each *.tir file holds RUN lines, e.g.
#   # RUN: tessera-opt %s --passes=dce | FileCheck %s
# Negative tests use `not tessera-opt ... 2>&1 | FileCheck %s` and check the
# exact diagnostic. Cases in one file are separated by "# -----" and run one
# at a time with --split-input-file.
import os
import lit.formats

config.name = "tessera"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".tir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.tessera_tools_dir), "..", "tests", "lit-out")
config.excludes = ["Inputs"]

config.substitutions.append(("%tessera_src", config.tessera_source_dir))
for tool in ["tessera-opt", "tessera"]:
    config.substitutions.append(
        (r"(?<![\w-])" + tool + r"(?![\w-])", os.path.join(config.tessera_tools_dir, tool)))
config.substitutions.append((r"(?<![\w-])FileCheck(?![\w-])", config.filecheck))
config.substitutions.append((r"(?<![\w-])not(?![\w-])", os.path.join(config.llvm_bin_dir, "not")))
config.environment["TESSERA_LOG_LEVEL"] = "warn"
# The partition test targets (tests/plugins/targets) are the only plugins
# lit sees besides the shipped ones: `--target tgt_a,tgt_b`. The probe is
# off to keep each tessera-opt run fast.
config.environment["TESSERA_PLUGIN_PATH"] = config.tessera_targets_dir
config.environment["TESSERA_PLUGIN_PROBE"] = "0"
config.substitutions.append(("%targets", config.tessera_targets_dir))
