"""The tiny study, run once per session (tests/workflow/tiny.py): the end-to-end test goes on with it, the browser
test opens its report."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_study():
    """The built tiny study (``work``, ``first``, ``jobs``; ``study`` and ``report``: its outputs as first built):
    built alone by ``tests/conftest.py`` when the suite reaches the tests after the cluster study (or this one's,
    if none)."""
    from tests.conftest import tiny_built

    return tiny_built()
