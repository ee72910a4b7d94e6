#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""CHANGELOG.md's Unreleased section: one line per change, and every link it
gives leads somewhere: the file exists and, with a #section, one of its
headings has that anchor (GitHub's: lowercase, punctuation dropped, spaces
as hyphens). Usage: changelog_check.py <source dir>"""
import os
import re
import sys


def anchors(path):
    out = set()
    with open(path, encoding="utf-8") as f:
        in_code = False
        for line in f:
            if line.startswith("```"):
                in_code = not in_code
            if in_code:
                continue
            m = re.match(r"#+ (.*)", line)
            if m:
                text = m.group(1).strip().lower()
                text = re.sub(r"[^\w\- ]", "", text)
                out.add(text.replace(" ", "-"))
    return out


def main():
    src = sys.argv[1]
    text = open(os.path.join(src, "CHANGELOG.md"), encoding="utf-8").read()
    start = text.index("## Unreleased")
    end = text.index("\n## ", start + 1)
    errors = []
    section = None
    for n, line in enumerate(text[start:end].split("\n"), text[:start].count("\n") + 1):
        if line.startswith("### "):
            section = line
            continue
        if section is None or not line.strip():
            continue
        if not line.startswith("- "):
            errors.append("%d: a change takes one line starting with '- '" % n)
            continue
        for target in re.findall(r"\]\(([^)]+)\)", line):
            if re.match(r"[a-z]+://", target):
                continue
            path, _, anchor = target.partition("#")
            full = os.path.join(src, path)
            if not os.path.exists(full):
                errors.append("%d: %s: no such file" % (n, path))
            elif anchor and anchor not in anchors(full):
                errors.append("%d: %s: no section #%s" % (n, path, anchor))
    for e in errors:
        print("CHANGELOG.md:" + e, file=sys.stderr)
    if errors:
        return 1
    print("CHANGELOG.md Unreleased: one line per change, every link found")
    return 0


sys.exit(main())
