"""Hidden test of a HumanEval-style task, written by `trio eval import`.

case.json beside this file holds the task's entry point and its test code,
which defines check(candidate); the test calls check with the entry point
of the workspace's solution.py.
"""
import json
import os
import unittest

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "case.json"), encoding="utf-8") as _f:
    _CASE = json.load(_f)


def _entry_point(test):
    import solution

    fn = getattr(solution, _CASE["entry_point"], None)
    test.assertTrue(callable(fn), "solution.py defines no function %s" % _CASE["entry_point"])
    return fn


class ImportedTask(unittest.TestCase):
    def test_entry_point(self):
        _entry_point(self)

    def test_check(self):
        fn = _entry_point(self)
        ns = {"__name__": "hidden_check"}
        exec(compile(_CASE["test"], "hidden_check.py", "exec"), ns)
        ns["check"](fn)
