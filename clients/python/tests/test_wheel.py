"""The wheel the build makes installs with pip, without an index, and imports."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


class Wheel(unittest.TestCase):
    def test_the_wheel_installs_and_imports(self):
        out = tempfile.mkdtemp(prefix="tally-wheel-")
        built = subprocess.run([sys.executable, os.path.join(HERE, "..", "build_wheel.py"), out],
                               capture_output=True, text=True, check=True)
        wheel = [f for f in os.listdir(out) if f.endswith(".whl")]
        self.assertEqual(len(wheel), 1, built.stdout)
        target = os.path.join(out, "site")
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                        "--disable-pip-version-check", "--target", target,
                        os.path.join(out, wheel[0])], check=True, capture_output=True)
        probe = subprocess.run(
            [sys.executable, "-c", "import tally_client, sys; print(tally_client.__version__, "
             "tally_client.__file__.startswith(sys.argv[1]))", target],
            env=dict(os.environ, PYTHONPATH=target), capture_output=True, text=True, check=True)
        self.assertEqual(probe.stdout.split(), ["0.2.0", "True"])


if __name__ == "__main__":
    unittest.main()
