"""Stand-in for the `expecttest` package, put on sys.path only when the real one is missing.

torch.testing._internal.common_utils imports expecttest (Debian ships no package for it and the
machine reaches no other registry) but the distributed suite uses nothing from it beyond the base
class and the ACCEPT flag. Inline expected-output checks, which no distributed test makes, fall
back to a plain string comparison.
"""
import unittest

ACCEPT = False


class TestCase(unittest.TestCase):
    longMessage = True

    def assertExpectedInline(self, actual, expect, skip=0):  # noqa: N802 (upstream's name)
        self.assertMultiLineEqual(expect, actual)
