"""The tiny study's report opened in a real browser: headless Chromium (Debian's ``chromium``) driven by Playwright.

Playwright's own browser download cannot be fetched on these machines, so the system Chromium is its
executable. Where no Chromium (or no Playwright) is installed the test says so and is skipped, unless
``HETVAL_REQUIRE_BROWSER=1`` (CI sets it when it has installed Chromium), when it fails instead.
"""

from __future__ import annotations

import os
import shutil

import pytest

from analysis.scoring.scorecard import VERDICTS


def _browser() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    why = "" if exe else "no chromium on PATH (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        why = why or "playwright is not installed (pip install -e '.[test]')"
    if why:
        if os.environ.get("HETVAL_REQUIRE_BROWSER") == "1":
            pytest.fail(f"HETVAL_REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)
    return exe or ""


@pytest.mark.slow
def test_the_report_in_a_real_browser(tiny_study):
    exe = _browser()
    from playwright.sync_api import sync_playwright

    assert tiny_study.first.returncode == 0, tiny_study.first.stderr[-3000:]
    page_file = tiny_study.report / "index.html"
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda m: m.type == "error" and problems.append(f"console error: {m.text}"))
            page.on("pageerror", lambda e: problems.append(f"script error: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"failed to load: {r.url}"))
            page.goto(page_file.as_uri(), wait_until="load")
            # the scorecard is the first table, with a verdict in every row
            header = page.eval_on_selector("table", "t => Array.from(t.querySelectorAll('thead th')).map(h => h.innerText)")
            assert "verdict" in header and "Kendall tau median [CI]" in header, header
            verdicts = page.eval_on_selector(
                "table.cells", "t => Array.from(t.querySelectorAll('tbody tr')).map(r => r.cells[4].innerText)")
            assert verdicts and set(verdicts) <= set(VERDICTS), verdicts
            # the matrix: every model on every case, each cell a verdict or, in grey, why not
            cells = page.eval_on_selector_all(
                "table.cells", "ts => Array.from(ts[1].querySelectorAll('tbody td')).slice(0).map("
                "c => [c.cellIndex, c.innerText, c.className])")
            judged = [(text, css) for i, text, css in cells if i > 0]
            assert judged and all(text in VERDICTS or (text.startswith("not applicable: ") and "v-none" in css)
                                  for text, css in judged), judged
            # every image decoded
            images = page.eval_on_selector_all("img", "els => els.map(i => [i.src, i.complete && i.naturalWidth > 0])")
            assert images and all(ok for _, ok in images), [src for src, ok in images if not ok]
            # every in-page link (the scorecard's evidence links among them) lands on an element of the page
            targets = page.eval_on_selector_all(
                "a[href^='#']", "as => as.map(a => [a.getAttribute('href'), !!document.getElementById(a.getAttribute('href').slice(1))])")
            assert any(href in ("#wp", "#fdm", "#peach") for href, _ in targets), targets
            assert all(found for _, found in targets), [href for href, found in targets if not found]
            page.click("table.cells tbody tr td a[href='#fdm']")  # following one: the FDM section is in view
            assert page.evaluate("document.getElementById('fdm').getBoundingClientRect().top") < 1000
            page.screenshot(path=str(tiny_study.report / "screenshot.png"), full_page=True)
        finally:
            browser.close()
    assert not problems, problems
    assert (tiny_study.report / "screenshot.png").stat().st_size > 10_000
