#!/usr/bin/env python3
"""Fill the `today` field of every case under tests/cases/ from a built llmgw.

For each case file: the host is written to a temporary file and checked with
`llmgw simulate --host` (a host llmgw refuses is an error of the case, exit 2);
then, for each want, `llmgw simulate --format json` and `llmgw plan --format
json` are run and what they decide is compared with the case's `expected`.

Usage: ci/cases_today.py LLMGW [--commit SHORT] [--check]
  LLMGW     the llmgw binary to ask
  --commit  the commit that binary was built from, recorded in `today.llmgw`
  --check   write nothing; exit 1 when a file's `today` differs from what the
            binary decides now (the files are rewritten otherwise)

Agreement (tests/cases/README.md, "Agreement"): the state is one of
`expected.state` (a string or a list), the variant and the version equal
`expected.variant` / `expected.version` where those are given, and
`expected.requires` is empty (a requirement names something llmgw at this
commit has no way to do or to know, so such a case disagrees by construction).
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CASES = Path(__file__).resolve().parent.parent / "tests" / "cases"


def run_json(args):
    p = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if p.returncode == 2:
        raise SystemExit(f"{' '.join(args)}: bad input: {p.stderr.strip()}")
    return json.loads(p.stdout)


def states(expected):
    s = expected["state"]
    return s if isinstance(s, list) else [s]


def decide(llmgw, host_file, want):
    sim = run_json([llmgw, "simulate", "--host", host_file, "--want", want, "--format", "json"])
    eng = sim["engines"][0]
    out = {
        "state": eng["state"],
        "variant": eng.get("variant"),
        "version": eng.get("version"),
        "detail": eng.get("detail"),
        "attempts": [
            {k: a[k] for k in ("variant", "outcome", "reason") if k in a} for a in eng.get("attempts", [])
        ],
    }
    if not want.endswith("@latest"):
        plan = run_json([llmgw, "plan", "--host", host_file, "--want", want, "--format", "json"])["plans"][0]
        out["plan"] = {
            "state": plan["state"],
            "candidates": [c["variant"] for c in plan.get("candidates", [])],
            "left_out": [{"variant": e["variant"], "reason": e["reason"]} for e in plan.get("excluded", [])],
        }
        if "reason" in plan:
            out["plan"]["reason"] = plan["reason"]
    return out


def agrees(expected, today):
    if today["state"] not in states(expected):
        return False
    for key in ("variant", "version"):
        if key in expected and expected[key] != today.get(key):
            return False
    return not expected.get("requires")


def main():
    argv = sys.argv[1:]
    if not argv:
        raise SystemExit(__doc__)
    llmgw = argv[0]
    commit = argv[argv.index("--commit") + 1] if "--commit" in argv else None
    check = "--check" in argv
    changed = []
    for path in sorted(CASES.glob("*.json")):
        case = json.loads(path.read_text())
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(case["host"], f)
            host_file = f.name
        try:
            today = {}
            for want in case["want"]:
                t = decide(llmgw, host_file, want)
                exp = case["expected"][want]
                t["agrees"] = agrees(exp, t)
                if not t["agrees"]:
                    t["breaks"] = exp["issue28"]
                today[want] = t
        finally:
            os.unlink(host_file)
        new = dict(case)
        new["today"] = {"llmgw": commit or case.get("today", {}).get("llmgw"), "decisions": today}
        if new != case:
            changed.append(path.name)
            if not check:
                path.write_text(json.dumps(new, indent=2, ensure_ascii=False) + "\n")
    if check and changed:
        print("today differs in:", *changed, sep="\n  ")
        sys.exit(1)
    print(f"{len(list(CASES.glob('*.json')))} cases; {'differ' if check else 'rewritten'}: {len(changed)}")


if __name__ == "__main__":
    main()
