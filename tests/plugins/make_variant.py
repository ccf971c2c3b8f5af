#!/usr/bin/env python3
"""Derives the zoo's broken files from a working plugin (tests/plugins).

    make_variant.py MODE GOOD.so OUT.so

MODE: text       a text file named like a plugin
      truncated  the first half of GOOD.so
      aarch64    GOOD.so claiming to be for AArch64 (e_machine 183)
      elf32      GOOD.so claiming to be a 32-bit ELF (EI_CLASS 1)
"""
import sys


def main():
    mode, good, out = sys.argv[1:4]
    with open(good, "rb") as f:
        data = bytearray(f.read())
    if mode == "text":
        data = bytearray(b"This is not a plugin: a text file named like one.\n")
    elif mode == "truncated":
        data = data[: len(data) // 2]
    elif mode == "aarch64":
        data[18:20] = (183).to_bytes(2, "little")  # e_machine
    elif mode == "elf32":
        data[4] = 1  # e_ident[EI_CLASS] = ELFCLASS32
    else:
        sys.exit(f"make_variant.py: unknown mode '{mode}'")
    with open(out, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
