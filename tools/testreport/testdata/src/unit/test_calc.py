import unittest

from calc import add


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_add_wrong(self):
        self.assertEqual(add(2, 2), 5, "two and two")

    def test_type_error(self):
        add(1, None)

    @unittest.skip("not today")
    def test_skipped(self):
        pass

    @unittest.expectedFailure
    def test_known_bug(self):
        self.assertEqual(add(1, 1), 3)

    def test_sub(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(i, 2)


class OtherTest(unittest.TestCase):
    def test_ok(self):
        self.assertTrue(True)
