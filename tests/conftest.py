import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"


def pytest_configure(config):
    config.addinivalue_line("markers", "spin: needs the spin binary and a C compiler")


@pytest.fixture(scope="session")
def require_spin():
    if shutil.which("spin") is None:
        pytest.fail("spin is not installed: run the README's set-up command (it installs spin and tcc)")
    return True
