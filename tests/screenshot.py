"""The README's picture of the page at /, and the page's weight and load time.

    python tests/screenshot.py                 # writes data/screenshot.jpg, prints the figures
    python tests/screenshot.py --out page.png  # PNG or JPEG, by the name's ending

It runs the stub (with the demo animals and its admin endpoints) on a free loopback
port, opens the page in headless Chromium through Playwright, adds and gets a pet
as a person would, and takes the picture. The load time is the median of 20 loads
of the page, from the start of navigation to the browser's load event.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import petstore_stub as stub
from test_browser import CHROMIUM_ARGS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', default=str(ROOT / 'data' / 'screenshot.jpg'))
    out = Path(parser.parse_args().out)
    from playwright.sync_api import sync_playwright

    chromium = shutil.which('chromium') or shutil.which('chromium-browser')
    with stub.serve(fixtures=True) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={'width': 1200, 'height': 900})
        home = server.url.removesuffix(server.app.base_path) + '/'
        loads = []
        for _ in range(20):
            page.goto(home)
            page.wait_for_load_state('load')
            loads.append(page.evaluate(
                "performance.getEntriesByType('navigation')[0].loadEventEnd"))
        server.reset()  # the picture shows one visit, not the twenty timed ones
        server.load_fixtures()
        page.goto(home)
        page.wait_for_selector('#pets-table tbody tr')
        page.fill('#create-form [name=name]', 'Pip')
        page.fill('#create-form [name=categoryId]', '3')
        page.select_option('#create-form [name=status]', 'available')
        page.click('#create-form button[type=submit]')
        page.wait_for_selector('#status:has-text("201")')
        page.fill('#get-form [name=petId]', '14')
        page.click('#get-form button[type=submit]')
        page.wait_for_selector('#status:has-text("200 OK")')
        page.wait_for_selector('#journal tbody tr')
        # A JPEG keeps the picture, which ships in the sdist, small.
        page.evaluate('window.scrollTo(0, 0)')
        options: dict[str, Any] = {'quality': 55} if out.suffix in ('.jpg', '.jpeg') else {}
        page.screenshot(path=str(out), **options)
        browser.close()
        weight = len(stub.page_template().encode('utf-8'))
    print(f'picture: {out}')
    print(f'page: {weight:,} bytes, one request (no script, style, font or image from '
          f'elsewhere); loads in {statistics.median(loads):.0f} ms on loopback '
          f'(median of {len(loads)}, navigation start to the load event)')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
