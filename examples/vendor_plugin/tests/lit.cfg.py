# lit configuration for the acme plugin's tests.
#
# CMake writes lit.site.cfg.py into the build folder (from
# lit.site.cfg.py.in) with the tools it found, then loads this file; ctest
# runs `lit <build>/tests`. Each *.tir / *.test file is a test: its RUN lines
# run in lit's shell with these substitutions:
#   tessera      the installed CLI of the SDK this plugin was built against
#   FileCheck    LLVM's FileCheck;  not: LLVM's `not` (expects a failure)
#   %plugin      the plugin file this build produced (libtessera_acme.so)
#   %plugin_dir  the folder it is in, which is also TESSERA_PLUGIN_PATH
#   %python      the Python that runs lit (for compare_npz.py)
# so `tessera compile model.tir --target acme` uses the plugin just built.
import os
import lit.formats

config.name = "acme"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".tir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.acme_test_exec_root
config.excludes = ["Inputs"]

# Longest first: %plugin_dir before %plugin.
config.substitutions.append(("%plugin_dir", config.acme_plugin_dir))
config.substitutions.append(("%plugin", config.acme_plugin))
config.substitutions.append(("%python", config.python))
# A tool's name only where a command starts it (not inside a path).
for name, path in [("tessera", config.tessera), ("FileCheck", config.filecheck),
                   ("not", config.not_tool)]:
    config.substitutions.append((r"(?<![^\s|;&(])" + name + r"(?=\s|$)", path))

# Only this build's plugin on the search path; the installed plugins (json,
# ...) are found too, in the prefix's plugin folder, as on a user's machine.
config.environment["TESSERA_PLUGIN_PATH"] = config.acme_plugin_dir
config.environment["TESSERA_LOG_LEVEL"] = "warn"
