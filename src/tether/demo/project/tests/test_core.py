import unittest

from calc import add, mean


class CoreTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_mean(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)

    def test_mean_of_nothing(self):
        with self.assertRaises(ValueError):
            mean([])
