#!/usr/bin/env python3
"""Builds docs/abi.md's snippets against the SDK as a vendor installs it.

Every fenced block preceded by `<!-- snippet: NAME -->` is written to
WORK/src/NAME. CMakeLists.txt is the project (it builds acme_plugin.cpp into
a plugin); every other .cpp snippet is added to it as an object library, so
each must compile against the installed SDK headers alone. Then the SDK
(only the SDK: BUILD/sdk's install script) is installed to WORK/prefix, the
project is configured and built against that prefix, and `tessera plugins`
must list the plugin the snippets built. A snippet that does not compile
fails the test with the compiler's message.

usage: check_abi_snippets.py --doc docs/abi.md --build BUILD --work WORK --tessera TESSERA
"""
import argparse
import os
import re
import shutil
import subprocess
import sys


def run(cmd, **kw):
    print("+ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"FAILED (exit {r.returncode}): {' '.join(cmd)}\n{r.stdout}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--doc", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--tessera", required=True)
    a = ap.parse_args()

    text = open(a.doc, encoding="utf-8").read()
    snippets = re.findall(r"<!-- snippet: (\S+) -->\n```[a-z]*\n(.*?)\n```", text, re.S)
    names = [n for n, _ in snippets]
    if len(set(names)) != len(names):
        sys.exit(f"{a.doc}: two snippets share a name: {names}")
    if "CMakeLists.txt" not in names or "acme_plugin.cpp" not in names:
        sys.exit(f"{a.doc}: expected snippets CMakeLists.txt and acme_plugin.cpp, found {names}")

    shutil.rmtree(a.work, ignore_errors=True)
    src = os.path.join(a.work, "src")
    os.makedirs(src)
    extra = []
    for name, body in snippets:
        with open(os.path.join(src, name), "w", encoding="utf-8") as f:
            f.write(body + "\n")
        if name.endswith(".cpp") and name != "acme_plugin.cpp":
            extra.append(name)
    print(f"{len(snippets)} snippets: {', '.join(names)}")
    with open(os.path.join(src, "CMakeLists.txt"), "a", encoding="utf-8") as f:
        f.write("\n# Added by the test: the other snippets, compiled against the SDK.\n")
        f.write(f"add_library(abi_snippets OBJECT {' '.join(extra)})\n")
        f.write("target_link_libraries(abi_snippets PRIVATE TesseraSDK::sdk)\n")
        f.write("target_compile_options(abi_snippets PRIVATE -Wall -Wextra -Werror)\n")

    prefix = os.path.join(a.work, "prefix")
    run(["cmake", "--install", os.path.join(a.build, "sdk"), "--prefix", prefix])
    build = os.path.join(a.work, "build")
    cfg = ["cmake", "-S", src, "-B", build, "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}"]
    if shutil.which("ccache"):
        cfg.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
    run(cfg)
    run(["cmake", "--build", build])

    plugin = os.path.join(build, "libtessera_acme.so")
    if not os.path.exists(plugin):
        sys.exit(f"the CMakeLists.txt snippet did not build {plugin}")
    env = dict(os.environ, TESSERA_PLUGIN_PATH=build)
    out = run([a.tessera, "plugins"], env=env)
    if plugin not in out:
        sys.exit(f"`tessera plugins` does not list the snippets' plugin {plugin}:\n{out}")
    print(out)


if __name__ == "__main__":
    main()
