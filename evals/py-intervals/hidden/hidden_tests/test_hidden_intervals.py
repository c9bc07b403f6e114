import unittest

from intervals import merge


class HiddenMergeTest(unittest.TestCase):
    def test_unsorted(self):
        self.assertEqual(merge([(8, 10), (1, 3), (2, 6)]), [(1, 6), (8, 10)])

    def test_touching(self):
        self.assertEqual(merge([(1, 2), (2, 3)]), [(1, 3)])

    def test_contained(self):
        self.assertEqual(merge([(1, 10), (2, 3)]), [(1, 10)])
