"""Print which conformance cases pass: `python scripts/conformance.py [feature...]`."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.conformance import check_case, check_invalid, load_cases  # noqa: E402


def main(argv: list[str]) -> int:
    features = set(argv)
    failed = 0
    total = 0
    for case in load_cases("dev.jsonl"):
        if features and case["feature"] not in features and case["id"] not in features:
            continue
        total += 1
        problem = check_case(case)
        if problem:
            failed += 1
            print(f"FAIL {case['id']}: {problem[:400]}")
    for case in load_cases("dev-invalid.jsonl"):
        if features and "invalid" not in features and case["id"] not in features:
            continue
        total += 1
        problem = check_invalid(case)
        if problem:
            failed += 1
            print(f"FAIL {case['id']}: {problem[:400]}")
    print(f"{total - failed}/{total} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
