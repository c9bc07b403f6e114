"""Hidden test of an MBPP-style task, written by `trio eval import`.

case.json beside this file holds the task's entry point, its setup code and
its assert statements; each assert is a test run in the namespace of the
workspace's solution.py after the setup code.
"""
import json
import os
import unittest

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "case.json"), encoding="utf-8") as _f:
    _CASE = json.load(_f)


class ImportedTask(unittest.TestCase):
    def _namespace(self):
        import solution

        self.assertTrue(callable(getattr(solution, _CASE["entry_point"], None)),
                        "solution.py defines no function %s" % _CASE["entry_point"])
        ns = dict(vars(solution))
        if _CASE["setup"]:
            exec(compile(_CASE["setup"], "hidden_setup.py", "exec"), ns)
        return ns

    def test_entry_point(self):
        self._namespace()


def _assert_test(code):
    def test(self):
        exec(compile(code, "hidden_assert.py", "exec"), self._namespace())
    return test


for _i, _code in enumerate(_CASE["tests"]):
    setattr(ImportedTask, "test_assert_%02d" % (_i + 1), _assert_test(_code))
for _i, _code in enumerate(_CASE["challenge_tests"]):
    setattr(ImportedTask, "test_challenge_%02d" % (_i + 1), _assert_test(_code))
