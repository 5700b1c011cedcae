#!/usr/bin/env python3
"""Tests scripts/lsan_tracer_crashes.py on ctest logs in ctest's own format: LeakSanitizer's
tracer crashing after a test passed is told apart from every real failure. The crash cannot be
made to happen on demand, so the logs are written here."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "lsan_tracer_crashes.py"
PASSED = ("[==========] 1 test from 1 test suite ran. (328 ms total)\n"
          "[  PASSED  ] 1 test.\n")
TRACER_CRASH = ("Tracer caught signal 11: addr=0x2698 pc=0x7f5cc26e80f0 sp=0x7f5cb03ffd10\n"
                "==11331==LeakSanitizer has encountered a fatal error.\n"
                "==11331==HINT: For debugging, try setting environment variable "
                "LSAN_OPTIONS=verbosity=1:log_threads=1\n")
LEAK = ("==9==ERROR: LeakSanitizer: detected memory leaks\n"
        "Direct leak of 8 byte(s) in 1 object(s) allocated from:\n")


def entry(index: int, name: str, output: str, passed: bool) -> str:
    return (f"{index}/9 Testing: {name}\n{index}/9 Test: {name}\n"
            f'Command: "/b/tests/x_test" "--gtest_filter={name}"\nDirectory: /b/tests\n'
            f'"{name}" start time: Dec 05 11:46 UTC\nOutput:\n{"-" * 58}\n{output}'
            f"<end of output>\nTest time =   0.39 sec\n{'-' * 58}\n"
            f"Test {'Passed' if passed else 'Failed'}.\n\n")


class LsanTracerCrashes(unittest.TestCase):
    def verdict(self, tests: list[tuple[str, str, bool]]) -> tuple[int, str]:
        with tempfile.TemporaryDirectory() as build:
            temporary = pathlib.Path(build) / "Testing" / "Temporary"
            temporary.mkdir(parents=True)
            log = "Start testing: Dec 05 11:46 UTC\n" + "-" * 58 + "\n"
            log += "".join(entry(i + 1, *t) for i, t in enumerate(tests))
            (temporary / "LastTest.log").write_text(log)
            failed = [f"{i + 1}:{name}" for i, (name, _, ok) in enumerate(tests) if not ok]
            (temporary / "LastTestsFailed.log").write_text("\n".join(failed) + "\n")
            run = subprocess.run([sys.executable, str(SCRIPT), build], capture_output=True,
                                 text=True)
            return run.returncode, run.stdout

    def test_a_tracer_crash_after_the_test_passed_is_run_again(self):
        code, out = self.verdict([("A.Fine", PASSED, True), ("B.Crashed", PASSED + TRACER_CRASH,
                                                             False)])
        self.assertEqual(code, 0)
        self.assertIn("B.Crashed", out)
        self.assertNotIn("A.Fine", out)

    def test_real_failures_stand(self):
        cases = {
            "a failed assertion": "[  FAILED  ] B.Bad\n" + TRACER_CRASH,
            "a leak": LEAK,
            "an AddressSanitizer report": "==1==ERROR: AddressSanitizer: heap-buffer-overflow\n",
            "undefined behaviour": "x.cpp:3:5: runtime error: signed integer overflow\n" + PASSED,
            "a crash before the test ended": TRACER_CRASH,
            "a test that passed and failed otherwise": PASSED,
        }
        for what, output in cases.items():
            with self.subTest(what):
                code, out = self.verdict([("B.Bad", output, False)])
                self.assertEqual(code, 1)
                self.assertIn("B.Bad", out)

    def test_one_real_failure_among_tracer_crashes_fails_the_run(self):
        code, out = self.verdict([("A.Crashed", PASSED + TRACER_CRASH, False),
                                  ("B.Leaked", PASSED + LEAK, False)])
        self.assertEqual(code, 1)
        self.assertIn("B.Leaked", out)
        self.assertNotIn("A.Crashed", out)

    def test_no_failed_tests_is_not_a_reason_to_run_again(self):
        self.assertEqual(self.verdict([("A.Fine", PASSED, True)])[0], 1)


if __name__ == "__main__":
    unittest.main()
