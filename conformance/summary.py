"""One-screen summary of an upstream conformance run.

    python3 conformance/summary.py --report artifacts/gateway-conformance-report.yaml \
        --log artifacts/conformance.log --tests artifacts/conformance-tests.json \
        --features conformance/supported-features.txt

The report (the suite's own, unchanged) gives each profile's core and extended statistics (every
profile of the report, GATEWAY-HTTP and GATEWAY-GRPC in make conformance-local; --profile picks
some); the suite's test list (``conformance.test -test.run '^TestListTests$'``) maps each test to its
features, so extended results are shown per claimed feature; the log (``go test -v``) gives each
test's PASS/FAIL and, for a failure, the suite's last reason for it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict

import yaml

RESULT = re.compile(r"^\s*--- (PASS|FAIL|SKIP): TestConformance/([A-Za-z0-9]+) \(")
SUBRESULT = re.compile(r"^\s*--- (PASS|FAIL|SKIP): TestConformance/([A-Za-z0-9]+)/(.+) \(")
# The suite's reasons: a failed expectation of a request, or a testify/require message.
REASON = re.compile(r"(Response expectation failed for request: .*?not ready yet: (?P<why>.*?) \(after [^)]*\)"
                    r"|Error:\s+(?P<err>.*)|Messages:\s+(?P<msg>.*))")
TEST_LINE = re.compile(r"^\s*(?:\S+\.go:\d+: )?(?:\d{4}-\d\d-\d\dT\S+: )?")


def diagnosis_excerpt(path: str, tail: int = 12) -> list[str]:
    """The lines of a suite log that say why it ran no test: its setup steps, errors and
    failures, then its last lines."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = [ln.rstrip("\n") for ln in fh]
    keep = re.compile(r"Test Setup:|Error:|Error Trace:|Messages:|--- FAIL: TestConformance |panic:|"
                      r"flag provided but not defined|^FAIL|exit status|timed out")
    picked = [ln for ln in lines[:-tail] if keep.search(ln)][-20:]
    return picked + lines[-tail:] if lines else ["(the log is empty)"]


def read_features(path: str) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        return [ln.strip() for ln in fh if ln.strip() and not ln.lstrip().startswith("#")]


def parse_log(path: str) -> tuple[dict[str, str], dict[str, list[str]], dict[str, dict[str, str]]]:
    """(test -> PASS/FAIL/SKIP, test -> distinct failure reasons, test -> {subtest: result})."""
    results: dict[str, str] = {}
    subs: dict[str, dict[str, str]] = defaultdict(dict)
    reasons: dict[str, dict[str, str]] = defaultdict(dict)  # test -> subtest/"" -> last reason
    current = ""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            m = RESULT.match(line)
            if m:
                results[m.group(2)] = m.group(1)
                continue
            m = SUBRESULT.match(line)
            if m:
                subs[m.group(2)][m.group(3)] = m.group(1)
                continue
            m = re.match(r"^=== (?:RUN|CONT|PAUSE|NAME)\s+TestConformance/([A-Za-z0-9]+)(?:/(.*))?$", line.rstrip())
            if m:
                current = f"{m.group(1)}/{m.group(2) or ''}"
                continue
            r = REASON.search(line)
            if r and current:
                why = (r.group("why") or r.group("err") or r.group("msg") or "").strip()
                if why:
                    test, _, sub = current.partition("/")
                    reasons[test][sub] = why
    distinct: dict[str, list[str]] = {}
    for test, by_sub in reasons.items():
        failed_subs = {s for s, res in subs.get(test, {}).items() if res == "FAIL"}
        whys = [w for s, w in by_sub.items() if not failed_subs or s in failed_subs or s == ""]
        distinct[test] = sorted(set(whys))
    return results, distinct, subs


HEADER = re.compile(r"^expected (?P<name>\S+) header to be set to (?P<want>.*), got (?P<got>.*)$")


def header_join_only(reason: str) -> bool:
    """The suite's header check failed only because an appended value was joined with ", "
    where it wants ","."""
    m = HEADER.match(reason)
    return bool(m) and m.group("got") != m.group("want") and m.group("got").replace(", ", ",") == m.group("want")


CHECKS = {"header-join": header_join_only}


def read_expected(path: str) -> dict[str, str]:
    out = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.split("#", 1)[0].strip()
            if line:
                name, kind = line.split()
                if kind not in CHECKS:
                    raise ValueError(f"{path}: unknown reason kind {kind!r}")
                out[name] = kind
    return out


def _figures(level: dict) -> str:
    """One conformance level's "passed/run passed, skipped (result)" from the report."""
    st = level.get("statistics") or {}
    passed, failed, skipped = st.get("Passed", 0), st.get("Failed", 0), st.get("Skipped", 0)
    return f"{passed}/{passed + failed} passed, {skipped} skipped (result: {level.get('result')})"


def print_profile(name: str, profile: dict, features: dict, tests: dict[str, dict], claimed: set[str],
                  results: dict[str, str]) -> None:
    """One profile's core and extended figures from the report, and its claimed extended features
    one by one from the log."""
    core_features = set(features["core"])
    extended_features = set(features["extended"])
    print(f"  {name}")
    core = profile.get("core") or {}
    print(f"    core:     {_figures(core)}")
    if core.get("failedTests"):
        print(f"      failed: {', '.join(core['failedTests'])}")
    print(f"    extended: {_figures(profile.get('extended') or {})}")
    for feature in sorted(claimed & extended_features):
        # A test counts for a feature when it needs it, every other feature it needs is claimed
        # (the profile's core features are, by running the profile), and it belongs to the profile
        # (the suite's rule: every feature it needs is one of the profile's).
        names = sorted(n for n, t in tests.items() if feature in t["features"]
                       and set(t["features"]) <= claimed | core_features
                       and set(t["features"]) <= core_features | extended_features)
        passed = [n for n in names if results.get(n) == "PASS"]
        failed = [n for n in names if results.get(n) == "FAIL"]
        line = f"      {feature:<36} {len(passed)}/{len(names)}"
        if failed:
            line += "   failed: " + ", ".join(failed)
        print(line)
    unclaimed = sorted(extended_features - claimed)
    if unclaimed:
        print(f"    not claimed: {', '.join(unclaimed)}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--report", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--tests", required=True, help="the suite's test list (JSON)")
    p.add_argument("--features", required=True, help="conformance/supported-features.txt")
    p.add_argument("--profile", action="append", dest="profiles",
                   help="a profile to summarize (repeatable; default: every profile of the report)")
    p.add_argument("--expected", help="conformance/expected-failures.txt: exit 1 unless every failure is listed "
                                      "there and fails for its listed reason only")
    p.add_argument("--normalized-log", help="the log of the diagnosis run (-titanium.join-normalized) of the "
                                            "header-join failures: each one it ran must pass there (one it did not run "
                                            "is reported, with the log's reasons, as inconclusive)")
    args = p.parse_args(argv)

    with open(args.report, encoding="utf-8") as fh:
        report = yaml.safe_load(fh)
    with open(args.tests, encoding="utf-8") as fh:
        suite = json.load(fh)
    claimed = set(read_features(args.features))
    results, reasons, _subs = parse_log(args.log)
    by_name = {r.get("name"): r for r in report.get("profiles") or []}
    # GATEWAY-HTTP first, then the others by name (the report's order is the suite's map order)
    names = args.profiles or sorted(by_name, key=lambda n: (n != "GATEWAY-HTTP", n))
    missing = [n for n in names if n not in by_name or n not in suite["profiles"]]
    if not names or missing:
        print(f"the report or the test list has no {', '.join(missing) or 'profile'}", file=sys.stderr)
        return 2
    tests = {t["name"]: t for t in suite["tests"]}

    impl = report.get("implementation") or {}
    print(f"Gateway API {report.get('gatewayAPIVersion')} ({report.get('gatewayAPIChannel')}) conformance, "
          f"profiles {', '.join(names)}, {impl.get('project', '?')} {impl.get('version', '')}")
    for name in names:
        print_profile(name, by_name[name], suite["profiles"][name], tests, claimed, results)
    failed_tests = sorted(n for n, r in results.items() if r == "FAIL")
    if failed_tests:
        print("  failures (the suite's last reason for each):")
        for n in failed_tests:
            for why in reasons.get(n) or ["(no reason found in the log)"]:
                print(f"    {n}: {why[:300]}")
    else:
        print("  no test failed")
    if not args.expected:
        return 0
    expected = read_expected(args.expected)
    problems = []
    normalized: dict[str, str] = {}
    if args.normalized_log:
        normalized = parse_log(args.normalized_log)[0]
    for n in failed_tests:
        kind = expected.get(n)
        if kind is None:
            problems.append(f"{n} failed and is not an expected failure")
        elif not reasons.get(n) or not all(CHECKS[kind](why) for why in reasons[n]):
            problems.append(f"{n} is expected to fail only for {kind}, but failed for: {'; '.join(reasons.get(n) or ['?'])}")
        elif args.normalized_log and kind == "header-join" and normalized.get(n) not in ("PASS", None):
            problems.append(f"{n} did not pass with the append join normalized ({normalized[n]}): "
                            f"it fails on more than the join")
    if args.normalized_log:
        joined = [n for n in failed_tests if expected.get(n) == "header-join"]
        passed = [n for n in joined if normalized.get(n) == "PASS"]
        print(f"  diagnosis run with \", \" read as \",\" (no report): {len(passed)}/{len(joined)} of the "
              f"header-join failures pass ({', '.join(passed) or '-'})")
        not_run = [n for n in joined if n not in normalized]
        if not_run:
            # The diagnosis is a second opinion on failures whose reasons were already checked
            # above; when it could not run them, say so and show why, but judge by the main run.
            print(f"  warning: the diagnosis run did not run {', '.join(not_run)}; it is inconclusive. "
                  f"Its log ({args.normalized_log}) says:")
            for line in diagnosis_excerpt(args.normalized_log):
                print(f"    | {line[:300]}")
    for n in sorted(set(expected) - set(failed_tests)):
        if results.get(n) == "PASS":
            print(f"  note: {n} passed although it is listed as an expected failure")
    if problems:
        print("  UNEXPECTED:")
        for line in problems:
            print(f"    {line}")
        return 1
    print(f"  every failure is an expected one, for its expected reason ({args.expected})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
