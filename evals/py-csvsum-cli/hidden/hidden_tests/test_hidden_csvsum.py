import os
import subprocess
import sys
import tempfile
import unittest


class HiddenCsvsumTest(unittest.TestCase):
    def run_on(self, text, column):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "data.csv")
            with open(p, "w") as f:
                f.write(text)
            return subprocess.run([sys.executable, "csvsum.py", p, column], capture_output=True, text=True)

    def test_integer_sum(self):
        r = self.run_on("name,qty\na,1\nb,\nc,5\n", "qty")
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "6"))

    def test_unknown_column(self):
        r = self.run_on("name,qty\na,1\n", "price")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown column: price", r.stderr)
