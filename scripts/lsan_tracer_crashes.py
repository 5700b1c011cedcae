#!/usr/bin/env python3
"""Tells whether every test of the last ctest run that failed did so only because LeakSanitizer's
own tracer crashed at exit ("Tracer caught signal 11 ... LeakSanitizer has encountered a fatal
error"), after the test itself passed. That crash is LeakSanitizer's, not the test's (its
stop-the-world tracer faults now and then on some machines), and it leaves the leak check undone,
so scripts/test-sanitize.sh runs such tests once more; any other failure stands.

    lsan_tracer_crashes.py BUILD_DIR
Exit 0 when there were failed tests and all of them are such crashes; 1 otherwise, naming the
failures that are not.
"""
import pathlib
import re
import sys

TRACER_CRASH = ("Tracer caught signal", "LeakSanitizer has encountered a fatal error")
# Any of these means the test or kiln failed, whatever LeakSanitizer did afterwards.
OTHER_FAILURES = ("[  FAILED  ]", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                  "runtime error:")


def outputs(log: str) -> dict[str, str]:
    """Each test's output in ctest's LastTest.log, by test name."""
    found = {}
    pattern = re.compile(r"^\d+/\d+ Testing: (.+?)\n.*?^Output:\n-+\n(.*?)<end of output>",
                         re.M | re.S)
    for match in pattern.finditer(log):
        found[match.group(1)] = match.group(2)
    return found


def only_a_tracer_crash(output: str) -> bool:
    return (all(s in output for s in TRACER_CRASH) and "[  PASSED  ]" in output and
            not any(s in output for s in OTHER_FAILURES))


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: lsan_tracer_crashes.py BUILD_DIR", file=sys.stderr)
        return 2
    temporary = pathlib.Path(sys.argv[1]) / "Testing" / "Temporary"
    failed_log = temporary / "LastTestsFailed.log"
    if not failed_log.is_file():
        print(f"lsan_tracer_crashes: no {failed_log}: nothing failed, or ctest did not run")
        return 1
    failed = [line.split(":", 1)[1] for line in failed_log.read_text().splitlines() if ":" in line]
    output = outputs((temporary / "LastTest.log").read_text(errors="replace"))
    others = [name for name in failed if not only_a_tracer_crash(output.get(name, ""))]
    if not failed or others:
        print("lsan_tracer_crashes: failed for other reasons: " + ", ".join(others or ["none"]))
        return 1
    print("lsan_tracer_crashes: LeakSanitizer's tracer crashed after these passed: " +
          ", ".join(failed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
