import os
import subprocess
import sys
import tempfile
import unittest


def run(*args):
    return subprocess.run([sys.executable, "wc.py", *args], capture_output=True, text=True)


class HiddenCLITest(unittest.TestCase):
    def test_file(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "notes.txt")
            with open(p, "w") as f:
                f.write("one two\nthree\n\nfour five six\n")
            r = run(p)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.strip(), "4 6 29 " + p)

    def test_missing_file(self):
        r = run("no-such-file.txt")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no-such-file.txt", r.stderr)
