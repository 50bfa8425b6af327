#!/usr/bin/env python3
"""Builds the client's wheel (PEP 427) with the standard library alone, so the build needs no
setuptools, wheel or network: `python3 build_wheel.py OUT_DIR` writes
OUT_DIR/tally_client-VERSION-py3-none-any.whl and prints its path and SHA-256.
`pip install ./clients/python` (setuptools, from pyproject.toml) installs the same files."""

import base64
import hashlib
import os
import re
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def project():
    text = open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8").read()
    field = lambda k: re.search(r'^%s\s*=\s*"([^"]*)"' % k, text, re.M).group(1)
    return field("name"), field("version"), field("description"), field("requires-python")


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def main(out):
    name, version, summary, python = project()
    dist = name.replace("-", "_")
    info = "%s-%s.dist-info" % (dist, version)
    files = []
    src = os.path.join(HERE, "src")
    for root, dirs, names in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for n in sorted(names):
            if n.endswith(".py"):
                full = os.path.join(root, n)
                files.append((os.path.relpath(full, src).replace(os.sep, "/"), open(full, "rb").read()))
    readme = open(os.path.join(HERE, "README.md"), "rb").read()
    metadata = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: %s\n"
                "License: Apache-2.0\nDescription-Content-Type: text/markdown\n\n"
                % (name, version, summary, python)).encode() + readme
    wheel = b"Wheel-Version: 1.0\nGenerator: tally build_wheel.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files += [(info + "/METADATA", metadata), (info + "/WHEEL", wheel)]
    record = "".join(record_line(p, d) + "\n" for p, d in files) + info + "/RECORD,,\n"
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "%s-%s-py3-none-any.whl" % (dist, version))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for p, d in files + [(info + "/RECORD", record.encode())]:
            entry = zipfile.ZipInfo(p, date_time=(2026, 1, 1, 0, 0, 0))  # same bytes every build
            entry.external_attr = 0o644 << 16
            z.writestr(entry, d)
    print("wheel: %s sha256 %s" % (path, hashlib.sha256(open(path, "rb").read()).hexdigest()))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "dist"))
