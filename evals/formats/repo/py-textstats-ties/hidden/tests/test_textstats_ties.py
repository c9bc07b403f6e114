import unittest

import textstats


class TopWordsTest(unittest.TestCase):
    def test_ties_alphabetical(self):
        self.assertEqual(textstats.top_words("pear apple fig apple pear", 3), [("apple", 2), ("pear", 2), ("fig", 1)])

    def test_case_insensitive(self):
        self.assertEqual(textstats.top_words("The cat saw the dog", 1), [("the", 2)])
