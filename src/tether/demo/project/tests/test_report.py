import unittest

from calc.report import render


class ReportTest(unittest.TestCase):
    def test_render_lists_every_row_under_a_header(self):
        lines = render([("alice", 3), ("bob", 5)]).splitlines()
        self.assertIn("name", lines[0])
        self.assertTrue(any("alice" in line and "3" in line for line in lines))
        self.assertTrue(any("bob" in line and "5" in line for line in lines))

    def test_render_ends_with_the_mean(self):
        self.assertTrue(render([("a", 1), ("b", 3)]).endswith("mean: 2"))
