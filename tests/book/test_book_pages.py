"""Every page of the built book, loaded once in headless Chromium and checked in every view:

1. rendered offline (``test_book_browser.offline_problems``: no JavaScript error, no request
   off the machine, images loaded, all math typeset, no error output);
2. its layout at 1280 px (``test_book_layout.check_layout``: nothing cut, no sideways
   scrolling, figures at their size, alt text);
3. axe-core at 1280 px in light mode, then in dark mode (``test_book_a11y.check_accessible``);
4. its layout at 390 px (scroll boxes reachable by keyboard, legible figures);
5. axe-core at 390 px.

One test class per page (``TestPage_book_03_em`` ...), its tests in that order on one loaded
page: a page is loaded once, not once per check. ``run.py test`` runs pytest-xdist with
``--dist loadscope``, which hands whole classes to its two workers, so the pages are shared
between them (a worker has one browser and one tab, for all the pages it is given). Needs the
built book and Chromium (skipped without them, except under CI, where that fails).
"""

from __future__ import annotations

import re

import pytest

from test_book_a11y import check_accessible
from test_book_browser import Watched, offline_problems
from test_book_layout import check_layout, open_tab, pages


@pytest.fixture(scope="module")
def browser_tab():
    """One browser and one tab for the worker's pages: the layout's ``Tab`` (loads, resizes,
    colour modes) and the offline check's ``Watched`` (errors and requests) on the same tab."""
    with open_tab() as tab:
        yield tab, Watched(tab.page)


@pytest.mark.browser
class PageChecks:
    """The checks of one page, in the order they run on it (see the module's docstring)."""

    page_path = "book/intro.html"

    def test_renders_offline(self, browser_tab, artifacts_dir):
        tab, watched = browser_tab
        watched.reset()
        tab.path = None  # a fresh load, watched from its first request
        tab.show(self.page_path, 1280, "light")
        shot = artifacts_dir / "screenshots" / (self.page_path.replace("/", "__") + ".png")
        found = offline_problems(watched, self.page_path, shot)
        assert not found, "\n".join(found)

    def test_layout_1280(self, browser_tab):
        check_layout(browser_tab[0], self.page_path, 1280)

    def test_accessible_1280_light(self, browser_tab):
        check_accessible(browser_tab[0], self.page_path, 1280, "light")

    def test_accessible_1280_dark(self, browser_tab):
        check_accessible(browser_tab[0], self.page_path, 1280, "dark")

    def test_layout_390(self, browser_tab):
        check_layout(browser_tab[0], self.page_path, 390)

    def test_accessible_390_light(self, browser_tab):
        check_accessible(browser_tab[0], self.page_path, 390, "light")


def _class_name(page_path: str) -> str:
    return "TestPage_" + re.sub(r"\W", "_", page_path.removesuffix(".html"))


for _path in pages() or ["book/intro.html"]:  # without a build: one class, which skips
    globals()[_class_name(_path)] = type(_class_name(_path), (PageChecks,),
                                         {"page_path": _path})
