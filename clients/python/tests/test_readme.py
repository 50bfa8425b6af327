"""Every python block of README.md runs against a real server and prints what it says it prints."""

import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import server  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src")
README = os.path.join(HERE, "..", "README.md")


def examples():
    with open(README, encoding="utf-8") as f:
        text = f.read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    return [b for b in blocks if "# prints:" in b]


class ReadmeExamples(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tally = server.Tally("file:" + tempfile.mkdtemp(prefix="tally-py-readme-"))

    @classmethod
    def tearDownClass(cls):
        cls.tally.stop()

    def test_there_are_examples(self):
        self.assertGreaterEqual(len(examples()), 6)

    def test_each_example_prints_what_it_says(self):
        env = dict(os.environ, TALLY_URL=self.tally.url, PYTHONPATH=SRC)
        for block in examples():
            expected = [line.split("# prints:", 1)[1].strip() for line in block.splitlines()
                        if line.startswith("# prints:")]
            with self.subTest(block.splitlines()[0]):
                run = subprocess.run([sys.executable, "-c", block], env=env,
                                     capture_output=True, text=True, timeout=120)
                self.assertEqual(run.returncode, 0, run.stderr)
                self.assertEqual(run.stdout.strip().splitlines(), expected)


if __name__ == "__main__":
    unittest.main()
