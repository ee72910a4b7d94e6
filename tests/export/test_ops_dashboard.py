#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_ops_dashboard.py - the Grafana dashboard is valid JSON and every
metric its queries (and the Prometheus rules' expressions) name is one the
library exports.

Usage: test_ops_dashboard.py SAMPLE DASHBOARD RULES
  SAMPLE     the test_ops_metric_sample program (prints every exported family)
  DASHBOARD  contrib/grafana/breaker.json
  RULES      contrib/prometheus/breaker.rules.yml (its recording rules'
             names count as known metrics; its expressions are checked too)
"""
import json
import re
import subprocess
import sys

KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
    "and", "or", "unless", "offset", "inf", "nan",
}


def exported_names(sample):
    out = subprocess.run([sample], check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        if line.startswith("# TYPE "):
            names.add(line.split()[2])
        elif line and not line.startswith("#"):
            names.add(re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0))
    return names


def recorded_names(rules_text):
    return set(re.findall(r"^\s*-?\s*record:\s*(\S+)", rules_text, re.M))


def rule_exprs(rules_text):
    # `expr: one line` or `expr: >` followed by more-indented lines.
    exprs = []
    lines = rules_text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)-?\s*expr:\s*(.*)$", line)
        if not m:
            continue
        if m.group(2) not in (">", "|", ">-", "|-"):
            exprs.append(m.group(2))
            continue
        indent = len(m.group(1))
        body = []
        for nxt in lines[i + 1:]:
            if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                break
            body.append(nxt.strip())
        exprs.append(" ".join(body))
    return exprs


def metric_names(expr):
    """The metric names a PromQL expression (or a Grafana label_values()
    variable query, whose last argument is a label) selects."""
    lv = re.match(r"^\s*label_values\((.*),\s*\w+\s*\)\s*$", expr)
    if lv:
        expr = lv.group(1)
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)         # string literals
    e = re.sub(r"\$\{?\w+\}?", "", e)                     # Grafana variables
    e = re.sub(r"\{[^}]*\}", "", e)                       # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)                      # ranges
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", e)
    names = set()
    for m in re.finditer(r"(?<![\w.])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?", e):
        word, call = m.group(1), m.group(2)
        if call or word.lower() in KEYWORDS:
            continue
        names.add(word)
    return names


def dashboard_exprs(node, where="dashboard"):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "expr" and isinstance(v, str):
                yield where, v
            elif k == "query" and isinstance(v, str):
                yield where, v
            elif k == "definition" and isinstance(v, str):
                yield where, v
            else:
                title = node.get("title") or node.get("name") or where
                yield from dashboard_exprs(v, str(title))
    elif isinstance(node, list):
        for v in node:
            yield from dashboard_exprs(v, where)


def main():
    sample, dashboard_path, rules_path = sys.argv[1:4]
    known = exported_names(sample)
    with open(rules_path) as f:
        rules_text = f.read()
    known |= recorded_names(rules_text)
    with open(dashboard_path) as f:
        dashboard = json.load(f)  # fails the test on invalid JSON

    # The fleet store's families are printed only by a sample built with it
    # (BREAKER_OPS_SAMPLE_FLEET); without it their names cannot be checked.
    fleet_built = any(n.startswith("breaker_fleet_") for n in known)

    def unknown(name):
        if not fleet_built and name.startswith("breaker_fleet_"):
            return False
        return name not in known

    problems = []
    checked = 0
    if not fleet_built:
        print("built without the fleet store: breaker_fleet_* names not checked")
    for where, expr in dashboard_exprs(dashboard):
        if expr == "prometheus":  # the datasource variable's type
            continue
        for name in metric_names(expr):
            checked += 1
            if unknown(name):
                problems.append(f"dashboard panel {where!r}: {name} in {expr!r}")
    for expr in rule_exprs(rules_text):
        for name in metric_names(expr):
            checked += 1
            if unknown(name):
                problems.append(f"rules: {name} in {expr!r}")
    # The extractor must find names at all, or the check proves nothing.
    if checked < 20:
        problems.append(f"only {checked} metric references found: the extractor is broken")
    # And it must catch a name that is not exported.
    if "breaker_state_total" in known or metric_names('rate(breaker_state_total{a="b"}[5m])') != {"breaker_state_total"}:
        problems.append("the extractor does not see an unknown name")
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{checked} metric references checked against {len(known)} known names")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
