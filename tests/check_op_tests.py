#!/usr/bin/env python3
"""Fails unless every op of the core op set has unit tests tagged with its name.

Usage: check_op_tests.py TESSERA_BINARY UNIT_TEST_BINARY
"""
import re
import subprocess
import sys

tessera, unit_tests = sys.argv[1], sys.argv[2]
ops = [line.split()[0] for line in subprocess.run(
    [tessera, "ops"], check=True, capture_output=True, text=True).stdout.splitlines() if line.strip()]
# Catch2 v2 exits with the number of tags listed, so the status is not checked.
tags = set(re.findall(r"\[([^\]]+)\]", subprocess.run(
    [unit_tests, "--list-tags"], capture_output=True, text=True).stdout))
missing = [op for op in ops if op not in tags]
if missing:
    print(f"ops without a unit test tagged [op]: {', '.join(missing)}")
    sys.exit(1)
print(f"{len(ops)} ops, each with tagged unit tests")
