"""The book as one PDF, printed from the built web pages by Chromium (``python3 run.py pdf``).

Not a Sphinx extension: ``run.py pdf`` imports it after the HTML build. It reuses what that
build executed and rendered (nothing is executed again, no second Sphinx build):

1. ``assemble``: the pages of ``_toc.yml``, in its order, are taken from ``_build/html``
   (each page's ``<article>``) into one document, ``_build/pdf/book.html``, after a title
   page and a table of contents (parts as in ``_toc.yml``). Every id gets its page's prefix
   and every link between pages becomes a link inside the document, so the PDF's
   cross-references (equations, sections, errata boxes, bibliography) jump within it; links
   to what the PDF does not hold (downloads, the index) lose their target. What only works
   on screen goes: buttons, the folded "Show code cell" blocks, heading permalinks. Folded
   boxes (exercise solutions, errata) print open. A self-check (an admonition of class
   ``selfcheck`` whose choices are dropdowns) prints as its question and lettered choices,
   with a link to its answers, which move to a back-matter section "Answers to the
   self-checks" (before the bibliography, in the contents and the outline), grouped by
   chapter, each linking back. The explorers' own scripts are kept, so Chromium draws them
   as the web page does, under a note that they are live in the web version.
2. ``print_pdf``: Chromium (Debian's, through Playwright) opens that document from a local
   server, waits for MathJax to typeset and for every explorer to draw, scales down any
   display equation still wider than the text column (and reports it), and prints A4 pages
   with page numbers. The page each chapter starts on is read from that PDF's named
   destinations; the title page and contents are printed again, alone, with those numbers,
   and put in place of the first pages (pypdf), which also adds an outline (bookmarks) of
   parts and chapters.

``build`` writes ``_build/pdf/crowdlearn.pdf`` and ``_build/pdf/report.json`` (pages, the
chapters and the page each starts on, equations that had to be scaled, explorers that did
not draw); ``tests/book/test_pdf.py`` checks both.
"""

from __future__ import annotations

import contextlib
import json
import posixpath
import re
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

PDF_NAME = "crowdlearn.pdf"
LIVE_NOTE = ("In the web version of this book this explorer is live: it recomputes in the "
             "browser as you move its controls. Printed here as drawn with the settings shown.")
WIDGET_NOTE = "In the web version of this book this output is a live widget; printed here as last drawn."
# chapter headings carry "4. " in front (use_multitoc_numbering); a lone title has none
_HEAD_NUMBER = re.compile(r"^\s*\d+(\.\d+)*\.\s+")


def toc_documents(root: Path) -> list[tuple[str | None, str]]:
    """``(part caption, docname)`` in reading order, from ``_toc.yml`` (the root first)."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    docs: list[tuple[str | None, str]] = [(None, _docname(toc["root"]))]

    def walk(entries, caption):
        for entry in entries or []:
            if "file" in entry:
                docs.append((caption, _docname(entry["file"])))
            walk(entry.get("sections"), caption)

    for part in toc.get("parts", []):
        walk(part.get("chapters"), part.get("caption"))
    walk(toc.get("chapters"), None)
    return docs


def _docname(path: str) -> str:
    return re.sub(r"\.(md|ipynb|rst)$", "", path)


def _slug(docname: str) -> str:
    return "d-" + re.sub(r"[^A-Za-z0-9_-]", "_", docname)


def _read_title(root: Path) -> tuple[str, str]:
    import yaml

    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    return str(config.get("title", "")), str(config.get("author", ""))


def assemble(root: Path, html_dir: Path, out_html: Path) -> dict:
    """Write the one-document book to ``out_html``; returns what it holds (chapters)."""
    from bs4 import BeautifulSoup

    docs = toc_documents(root)
    title, author = _read_title(root)
    slugs = {doc: _slug(doc) for _, doc in docs}
    base = posixpath.relpath(str(html_dir), str(out_html.parent))  # e.g. "../html"
    head = {"links": [], "mathjax": "", "states": []}  # gathered from the pages' <head>
    chapters, bodies = [], []
    answer_groups: list[tuple[str, str, list[dict]]] = []  # (chapter id, title, answers)
    for part, doc in docs:
        page = html_dir / f"{doc}.html"
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        _read_head(soup, head, base, posixpath.dirname(doc))
        article = soup.select_one("article.bd-article")
        if article is None:
            raise RuntimeError(f"{page}: no <article class='bd-article'> (theme changed?)")
        answers = _article_to_print(article, soup, doc, slugs, base)
        chapter = _chapter_entry(article, doc, slugs[doc], part)
        chapters.append(chapter)
        bodies.append(f'<section class="pdf-doc" id="{chapter["id"]}" data-doc="{doc}">'
                      f"{article.decode_contents()}</section>")
        if answers:
            answer_groups.append((chapter["id"], chapter["title"], answers))
    printed, bodies = with_answers_section(chapters, bodies, answer_groups)
    toc_rows, parts, body = _parts_and_contents(printed, bodies)
    css = (Path(root) / "book" / "_static" / "print.css").read_text(encoding="utf-8")
    head_html = (f'<meta charset="utf-8">\n<title>{_esc(title)}</title>\n'
                 f"{''.join(head['links'])}\n<style>{css}</style>")
    scripts = _scripts(base, head["mathjax"], head["states"])

    def front(starts: dict[str, int]) -> str:
        """The front pages alone, with their page numbers (``print_pdf`` prints them again)."""
        return _document(head_html, "", _front_pages(title, author, toc_rows, starts))

    out_html.parent.mkdir(parents=True, exist_ok=True)
    out_html.write_text(_document(head_html, scripts, _front_pages(title, author, toc_rows)
                                  + "".join(body)), encoding="utf-8")
    return {"title": title, "chapters": chapters, "parts": parts, "printed": printed,
            "selfchecks": sum(len(a) for _, _, a in answer_groups), "front": front}


def _rewrite_url(url: str, page_dir: str, slug: str, slugs: dict[str, str]) -> str | None:
    """A link of page ``page_dir`` (whose ids carry ``slug``): its in-document target, the
    URL itself if external, or None (another page, the index, a download: not in the PDF)."""
    parts = urlsplit(url)
    if parts.scheme or url.startswith("//"):
        return url
    if not parts.path:  # "#frag" on the same page
        return f"#{slug}--{unquote(parts.fragment)}" if parts.fragment else f"#{slug}"
    target = posixpath.normpath(posixpath.join(page_dir, unquote(parts.path)))
    doc = target[:-5] if target.endswith(".html") else None
    if doc is not None and doc in slugs:
        if parts.fragment:
            return f"#{slugs[doc]}--{unquote(parts.fragment)}"
        return f"#{slugs[doc]}"
    return None


def _read_head(soup, head: dict, base: str, page_dir: str) -> None:
    """Gather into ``head`` what the document's head needs from a page's ``<head>``: the
    stylesheets (of the first page that has any), the first MathJax configuration, and every
    page's widget state."""
    if not head["links"]:
        for link in soup.head.find_all("link", rel="stylesheet"):
            href = posixpath.normpath(posixpath.join(base, page_dir, link["href"]))
            head["links"].append(f'<link rel="stylesheet" href="{href}">')
    for script in soup.head.find_all("script"):
        text = script.string or ""
        if not head["mathjax"] and text.strip().startswith("window.MathJax"):
            head["mathjax"] = text
        if script.get("type") == "application/vnd.jupyter.widget-state+json":
            head["states"].append(text)


def _article_to_print(article, soup, doc: str, slugs: dict[str, str], base: str) -> list[dict]:
    """Make a page's ``<article>`` printable in place (see the module's docstring, step 1);
    returns its self-checks' answers (``selfchecks_to_print``)."""
    _drop_screen_only(article)
    _prefix_ids(article, slugs[doc])
    _relink(article, posixpath.dirname(doc), slugs[doc], slugs, base)
    answers = selfchecks_to_print(article, soup)
    for selector, text in ((".cl-explorer", LIVE_NOTE),
                           ("script[type='application/vnd.jupyter.widget-view+json']",
                            WIDGET_NOTE)):
        for el in article.select(selector):
            note = soup.new_tag("p", attrs={"class": "pdf-live-note"})
            note.string = text
            el.insert_before(note)
    return answers


def _drop_screen_only(article) -> None:
    """Remove what only works on screen; open what is folded."""
    for sel in ("a.headerlink", "details.hide", "button", ".toggle-button",
                "div.toctree-wrapper",  # the web's own contents lists
                "script[type='text/x-thebe-config']", "div.cell_output > script[src]"):
        for el in article.select(sel):
            el.decompose()
    for script in article.find_all("script"):
        if (script.string or "").strip().startswith("kernelName"):
            script.decompose()
    for el in article.select("details"):
        el["open"] = ""
    for el in article.select(".toggle-hidden"):
        el["class"] = [c for c in el["class"] if c != "toggle-hidden"]


def _prefix_ids(article, slug: str) -> None:
    """Ids carry the page's prefix; the explorers' scripts look theirs up by id."""
    for el in article.find_all(id=True):
        el["id"] = f"{slug}--{el['id']}"
    for script in article.find_all("script"):
        if script.string and "getElementById" in script.string:
            script.string = re.sub(
                r"getElementById\((['\"])(.+?)\1\)",
                lambda m: f"getElementById({m.group(1)}{slug}--{m.group(2)}{m.group(1)})",
                script.string)


def _relink(article, page_dir: str, slug: str, slugs: dict[str, str], base: str) -> None:
    """Links between pages become links inside the document (a link to what the PDF does not
    hold loses its target); images and scripts load from the HTML build."""
    for a in article.find_all("a", href=True):
        new = _rewrite_url(a["href"], page_dir, slug, slugs)
        if new is None:
            a.unwrap() if not a.find("img") else a.attrs.pop("href")
        else:
            a["href"] = new
    for el in article.find_all(src=True):
        if not urlsplit(el["src"]).scheme and not el["src"].startswith("data:"):
            el["src"] = posixpath.normpath(posixpath.join(base, page_dir, el["src"]))
        if el.name == "img":
            el.attrs.pop("loading", None)


def _chapter_entry(article, doc: str, slug: str, part: str | None) -> dict:
    """What the contents, the outline and the report know of a page: its heading (number)."""
    h1 = article.find("h1")
    heading = h1.get_text(" ", strip=True) if h1 else doc
    number = _HEAD_NUMBER.match(heading)
    return {"doc": doc, "id": slug, "part": part, "title": heading,
            "number": number.group(0).strip().rstrip(".") if number else None}


def _parts_and_contents(printed: list[dict], bodies: list[str]):
    """``(toc_rows, parts, body)``: the contents' rows (a part's row as HTML, a chapter's as
    ``(id, title)``), the parts (``id``, ``title``) and the body's pieces, each part's title
    page before its first chapter."""
    toc_rows, seen_parts, parts_html, parts = [], set(), {}, []
    for chapter in printed:
        part = chapter["part"]
        if part and part not in seen_parts:
            seen_parts.add(part)
            pid = f"part-{len(seen_parts)}"
            parts.append({"id": pid, "title": part})
            parts_html[chapter["id"]] = (f'<section class="pdf-part" id="{pid}">'
                                         f"<h1>{_esc(part)}</h1></section>")
            toc_rows.append(f'<li class="pdf-toc-part"><a href="#{pid}">{_esc(part)}</a></li>')
        toc_rows.append((chapter["id"], chapter["title"]))
    body = []
    for chapter, html in zip(printed, bodies):
        body.append(parts_html.get(chapter["id"], ""))
        body.append(html)
    return toc_rows, parts, body


def _scripts(base: str, mathjax_config: str, widget_states: list[str]) -> str:
    """The document's scripts: MathJax (the pages' settings, without the hidden MathML copy
    of every formula: for screen readers on the web; in a PDF it is only more to lay out and
    stray text) and the widgets' state and renderer."""
    match = re.match(r"\s*window\.MathJax\s*=\s*(\{.*\})\s*;?\s*$", mathjax_config, re.S)
    settings = json.loads(match.group(1)) if match else {}
    settings.setdefault("options", {})["enableAssistiveMml"] = False
    states = "".join(f'<script type="application/vnd.jupyter.widget-state+json">{s}</script>'
                     for s in widget_states)
    return f"""<script>window.MathJax = {json.dumps(settings)};</script>
<script defer src="{base}/_static/vendor/mathjax/tex-mml-chtml.js"></script>
<script src="{base}/_static/widgets-mathjax3.js"></script>
{states}
<script data-jupyter-widgets-cdn-only="false" src="{base}/_static/vendor/jupyter-widgets/embed.js"></script>"""


def _front_pages(title: str, author: str, toc_rows: list,
                 starts: dict[str, int] | None = None) -> str:
    """The title page and the table of contents (with page numbers once known)."""
    rows = []
    for row in toc_rows:
        if isinstance(row, str):
            rows.append(row)
            continue
        ident, label = row
        number = (starts or {}).get(ident, "")
        rows.append(f'<li class="pdf-toc-chapter"><a href="#{ident}">'
                    f'<span class="pdf-toc-title">{_esc(label)}</span>'
                    f'<span class="pdf-toc-page">{number}</span></a></li>')
    return f"""<section class="pdf-title-page">
<p class="pdf-title">{_esc(title)}</p>
<p class="pdf-author">{_esc(author)}</p>
<p class="pdf-edition">Printed from the web version of the book on {time.strftime('%Y-%m-%d')}.
The explorers are live only there; here they are shown as drawn.</p>
</section>
<nav class="pdf-toc" id="pdf-toc"><h1>Contents</h1><ol>{''.join(rows)}</ol></nav>"""


def _document(head: str, scripts: str, content: str) -> str:
    """A whole HTML document around ``content``, laid out as the book's article column."""
    return f"""<!DOCTYPE html>
<html lang="en" data-theme="light" data-mode="light">
<head>
{head}
{scripts}
</head>
<body>
<div class="bd-main"><div class="bd-content"><div class="bd-article-container">
<article class="bd-article pdf-book">
{content}
</article></div></div></div>
</body>
</html>
"""


# -- self-checks: the questions stay in their chapter, the answers go to the back -----------
ANSWERS_ID = "pdf-selfcheck-answers"
ANSWERS_TITLE = "Answers to the self-checks"
ANSWERS_BEFORE = "book/bibliography"  # the answers section is printed before this page


def selfchecks_to_print(article, soup) -> list[dict]:
    """Turn each self-check of ``article`` (ids already prefixed, links rewritten) into its
    question with the choices listed (letter and text, no answer) and a link to its answers;
    returns, per self-check, what the answers section prints: ``id``, ``title``, ``right``
    (the right letter) and ``choices`` (``(label html, explanation html)``)."""
    found = []
    for box in article.select("div.admonition.selfcheck"):
        title_el = box.find(class_="admonition-title")
        title = title_el.get_text(" ", strip=True) if title_el else "Self-check"
        ident = box.get("id") or f"pdf-selfcheck-{len(found) + 1}"
        box["id"] = ident
        choices, right = [], None
        listing = soup.new_tag("ol", attrs={"class": "pdf-selfcheck-choices"})
        dropdowns = box.select("details.sd-dropdown")
        for details in dropdowns:
            label = details.select_one(".sd-summary-text") or details.find("summary")
            content = details.select_one(".sd-summary-content") or details
            label_html = label.decode_contents().strip()
            if content.get_text(" ", strip=True).startswith("Right."):
                right = label.get_text(" ", strip=True)[:3]  # "(c)"
            choices.append((label_html, content.decode_contents().strip()))
            item = soup.new_tag("li")
            _append_html(item, label_html)
            listing.append(item)
        if not dropdowns:
            continue
        dropdowns[0].insert_before(listing)
        for details in dropdowns:
            details.decompose()
        link = soup.new_tag("p", attrs={"class": "pdf-selfcheck-link"})
        anchor = soup.new_tag("a", href=f"#pdf-answer-{ident}")
        anchor.string = f"The answer to {title} is at the back of the book."
        link.append(anchor)
        box.append(link)
        found.append({"id": ident, "title": title, "right": right, "choices": choices})
    return found


def _append_html(tag, html: str) -> None:
    """Append the nodes of ``html`` to ``tag``."""
    from bs4 import BeautifulSoup

    for node in list(BeautifulSoup(html, "html.parser").contents):
        tag.append(node.extract())


def answers_html(groups: list[tuple[str, str, list[dict]]]) -> str:
    """The back-matter section: per chapter, per self-check, the right letter and every
    choice with its explanation, each linking back to its question."""
    parts = [f'<section class="pdf-doc pdf-answers" id="{ANSWERS_ID}">'
             f"<h1>{_esc(ANSWERS_TITLE)}</h1>"
             "<p>Each entry names the right choice and says why every choice is right or "
             "wrong; its title links back to the question.</p>"]
    for chapter_id, heading, answers in groups:
        parts.append(f'<h2 id="{ANSWERS_ID}-{chapter_id}"><a href="#{chapter_id}">'
                     f"{_esc(heading)}</a></h2>")
        for answer in answers:
            rows = "".join(f'<dt>{label}</dt><dd>{explanation}</dd>'
                           for label, explanation in answer["choices"])
            parts.append(
                f'<div class="pdf-answer" id="pdf-answer-{answer["id"]}">'
                f'<p class="pdf-answer-title"><a href="#{answer["id"]}">{_esc(answer["title"])}'
                f"</a>: the right choice is {_esc(answer['right'] or '?')}.</p>"
                f'<dl class="pdf-answer-choices">{rows}</dl></div>')
    parts.append("</section>")
    return "".join(parts)


def with_answers_section(chapters: list[dict], bodies: list[str],
                         groups: list[tuple[str, str, list[dict]]]):
    """``(printed, bodies)``: the pages as printed, with the answers section (a page of its
    own in the contents, the outline and the PDF) before ``ANSWERS_BEFORE``, else last."""
    if not groups:
        return list(chapters), list(bodies)
    docs = [c["doc"] for c in chapters]
    at = docs.index(ANSWERS_BEFORE) if ANSWERS_BEFORE in docs else len(docs)
    part = chapters[at]["part"] if at < len(chapters) else (chapters[-1]["part"]
                                                            if chapters else None)
    entry = {"doc": None, "id": ANSWERS_ID, "part": part, "title": ANSWERS_TITLE,
             "number": None}
    return (chapters[:at] + [entry] + chapters[at:],
            bodies[:at] + [answers_html(groups)] + bodies[at:])


def _esc(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


@contextlib.contextmanager
def _serve(directory: Path):
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
# A4 with 18 mm side margins: the text column is 174 mm (658 CSS px at 96 px/in)
PAGE = {"format": "A4", "margin": {"top": "18mm", "bottom": "18mm", "left": "18mm",
                                   "right": "18mm"}}
CONTENT_WIDTH_PX = round((210 - 36) / 25.4 * 96)
FOOTER = ('<div style="font: 8pt sans-serif; color: #555; width: 100%; text-align: center;">'
          '<span class="pageNumber"></span></div>')


def _header(title: str) -> str:
    return ('<div style="font: 7pt sans-serif; color: #777; width: 100%; text-align: right; '
            f'margin-right: 18mm;">{_esc(title)}</div>')


# runs in the page before printing: everything typeset and drawn, then measured
_PREPARE = r"""
async () => {
  const report = {explorers: 0, explorers_not_drawn: [], scaled_equations: [],
                  overflowing: []};
  if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
  await document.fonts.ready;
  await Promise.all([...document.images].map(img => img.complete ? null :
    new Promise(r => { img.onload = img.onerror = r; })));
  // the explorers draw synchronously when their module runs; give them a frame
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  for (const el of document.querySelectorAll('.cl-explorer')) {
    report.explorers += 1;
    if (!el.querySelector('svg, canvas')) report.explorers_not_drawn.push(el.id);
  }
  const column = document.querySelector('.pdf-book').clientWidth;
  for (const eq of document.querySelectorAll('mjx-container[display="true"]')) {
    const box = eq.closest('div.math') || eq;
    const need = eq.scrollWidth, have = box.clientWidth || column;
    if (need > have + 1) {
      const f = have / need;
      eq.style.fontSize = (f * 100).toFixed(1) + '%';
      const id = (box.id || (box.closest('[id]') || {}).id || '');
      report.scaled_equations.push({id, factor: Math.round(f * 1000) / 1000,
                                    fits: eq.scrollWidth <= box.clientWidth + 1});
    }
  }
  // an inline formula cannot break: one that runs past the column's right edge moves to a
  // line of its own (inline-block), and one wider than the column is scaled down to it
  report.scaled_formulas = [];
  const right = document.querySelector('.pdf-book').getBoundingClientRect().right;
  const inline = [...document.querySelectorAll('mjx-container:not([display="true"])')]
    .filter(el => !el.closest('.cl-explorer') && el.getBoundingClientRect().right > right + 1);
  for (const el of inline) el.style.display = 'inline-block';
  for (const el of inline) {
    const r = el.getBoundingClientRect();
    if (r.width > column + 1) {
      el.style.fontSize = (column / r.width * 100).toFixed(1) + '%';
      report.scaled_formulas.push({id: (el.closest('[id]') || {}).id || '',
        factor: Math.round(column / r.width * 1000) / 1000,
        fits: el.getBoundingClientRect().right <= right + 1});
    }
  }
  report.formulas_past_the_margin = [...document.querySelectorAll('mjx-container:not([display="true"])')]
    .filter(el => !el.closest('.cl-explorer') && el.getBoundingClientRect().right > right + 1)
    .map(el => (el.closest('[id]') || {}).id || '').slice(0, 20);
  for (const el of document.querySelectorAll('.pdf-book img, .pdf-book table, .pdf-book pre, .pdf-book svg')) {
    const r = el.getBoundingClientRect();
    if (r.width > column + 1) report.overflowing.push({tag: el.tagName,
      id: (el.closest('[id]') || {}).id || '', width: Math.round(r.width)});
  }
  return report;
}
"""


def print_pdf(out_html: Path, pdf: Path, serve_root: Path, chromium: str, title: str,
              chapters: list[dict], parts: list[dict], front, timeout_s: float = 900) -> dict:
    """Print ``out_html`` (under ``serve_root``) to ``pdf`` with Chromium; returns the report.

    The book is printed once; the table of contents then gets its page numbers (from the
    PDF's named destinations, which Chromium writes for every link target), and the front
    pages (``front(starts)``, a document of their own) are printed again and put in place of
    the first ones, keeping the links of the first print."""
    from playwright.sync_api import sync_playwright

    rel = out_html.relative_to(serve_root).as_posix()
    ids = [c["id"] for c in chapters] + [p["id"] for p in parts]
    options = dict(PAGE, display_header_footer=True, header_template=_header(title),
                   footer_template=FOOTER, print_background=True)
    full = pdf.with_suffix(".full.pdf")
    front_pdf = pdf.with_suffix(".front.pdf")
    with _serve(serve_root) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": CONTENT_WIDTH_PX + 2, "height": 1100})
            # a guard only: the waits below end on events (load, MathJax's promise)
            page.set_default_timeout(timeout_s * 1000)
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.emulate_media(media="print")
            clock = time.perf_counter()
            page.goto(f"{url}/{rel}", wait_until="load")
            page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
            report = page.evaluate(_PREPARE)
            report["page_errors"] = errors
            seconds = {"load_typeset": time.perf_counter() - clock}
            clock = time.perf_counter()
            page.pdf(path=str(full), **options)
            seconds["print"] = time.perf_counter() - clock
            clock = time.perf_counter()
            starts = _start_pages(full, ids)
            # the front pages again, alone, with the page numbers: same style, same layout
            front_html = out_html.with_name("front.html")
            front_html.write_text(front(starts), encoding="utf-8")
            page.goto(f"{url}/{front_html.relative_to(serve_root).as_posix()}",
                      wait_until="load")
            page.evaluate("async () => { await document.fonts.ready; }")
            page.pdf(path=str(front_pdf), **options)
            seconds["print_front"] = time.perf_counter() - clock
        finally:
            browser.close()
    clock = time.perf_counter()
    report["toc_numbered"] = _finish(full, front_pdf, pdf, chapters, parts, starts, title)
    full.unlink()
    front_pdf.unlink()
    seconds["finish"] = time.perf_counter() - clock
    report["seconds_by_step"] = {k: round(v, 1) for k, v in seconds.items()}
    report["chapter_pages"] = _start_pages(pdf, ids)
    report["toc_matches"] = report["chapter_pages"] == starts
    return report


def _finish(full: Path, front: Path, pdf: Path, chapters: list[dict], parts: list[dict],
            starts: dict[str, int], title: str) -> bool:
    """``full`` with its front pages from ``front`` (same layout, page numbers filled in;
    the links stay those of ``full``), an outline of parts and chapters, and metadata.
    False if the front pages could not be swapped (their page count differs)."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import ContentStream, NameObject

    _quiet_pypdf()
    writer = PdfWriter(clone_from=str(full))
    new = PdfReader(str(front))
    first = starts.get(chapters[0]["id"])
    swap = first is not None and len(new.pages) == first - 1
    for i, source in enumerate(new.pages if swap else []):
        if "/Annots" in source:
            del source[NameObject("/Annots")]
        target = writer.pages[i]
        target.replace_contents(ContentStream(None, writer))
        target.merge_page(source)
    part_items = {}
    for chapter in chapters:
        page = starts.get(chapter["id"])
        if page is None:
            continue
        parent = None
        part = next((p for p in parts if p["title"] == chapter["part"]), None)
        if part is not None:
            if part["id"] not in part_items and part["id"] in starts:
                part_items[part["id"]] = writer.add_outline_item(
                    part["title"], starts[part["id"]] - 1)
            parent = part_items.get(part["id"])
        writer.add_outline_item(chapter["title"], page - 1, parent=parent)
    writer.page_mode = "/UseOutlines"
    writer.add_metadata({"/Title": title, "/Creator": "run.py pdf (Chromium)"})
    with open(pdf, "wb") as f:
        writer.write(f)
    return swap


def read_report(pdf: Path) -> dict:
    """The report ``build`` wrote next to ``pdf``."""
    return json.loads((Path(pdf).parent / "report.json").read_text(encoding="utf-8"))


def problems(report: dict) -> list[str]:
    """What in the report means a page of the PDF is not as it should be."""
    found = []
    if report.get("explorers_not_drawn"):
        found.append(f"explorers not drawn: {report['explorers_not_drawn']}")
    if report.get("page_errors"):
        found.append(f"JavaScript errors in the printed document: {report['page_errors'][:5]}")
    cut = [e for e in report.get("scaled_equations", []) if not e["fits"]]
    if cut:
        found.append(f"display equations wider than the text column: {cut}")
    if report.get("formulas_past_the_margin"):
        found.append(f"inline formulas past the right margin: {report['formulas_past_the_margin']}")
    if report.get("overflowing"):
        found.append(f"wider than the text column: {report['overflowing'][:10]}")
    if not report.get("toc_numbered", False):
        found.append("the table of contents has no page numbers (front pages not swapped)")
    if not report.get("toc_matches", False):
        found.append("the table of contents' page numbers do not match the pages")
    if report.get("selfchecks") and report.get("selfcheck_answers_page") is None:
        found.append("the self-checks' answers section has no page")
    missing = [c["title"] for c in report.get("chapters", []) if c.get("page") is None]
    if missing:
        found.append(f"no page found for {missing}")
    return found


def _quiet_pypdf() -> None:
    import logging

    # Chromium's PDFs make pypdf note a trailer /Size smaller than the object count
    logging.getLogger("pypdf").setLevel(logging.ERROR)


def _start_pages(pdf: Path, ids: list[str]) -> dict[str, int]:
    """The (1-based) page each of ``ids`` is on, from the PDF's named destinations."""
    from pypdf import PdfReader

    _quiet_pypdf()
    reader = PdfReader(str(pdf))
    found = {}
    for name, dest in reader.named_destinations.items():
        name = name.lstrip("/")  # pypdf gives names as PDF name objects
        if name in ids:
            found[name] = reader.get_destination_page_number(dest) + 1
    return found


def build(root: Path, build_dir: Path, chromium: str) -> Path:
    """Assemble and print the book from ``build_dir/html``; returns the PDF's path."""
    start = time.perf_counter()
    html_dir = build_dir / "html"
    out_dir = build_dir / "pdf"
    out_html = out_dir / "book.html"
    info = assemble(root, html_dir, out_html)
    pdf = out_dir / PDF_NAME
    # the pages as printed: the chapters, and the answers to the self-checks before the
    # bibliography (contents, outline and page numbers); the report lists _toc.yml's pages
    report = print_pdf(out_html, pdf, build_dir, chromium, info["title"], info["printed"],
                       info["parts"], info["front"])
    from pypdf import PdfReader

    report["selfchecks"] = info["selfchecks"]
    report["selfcheck_answers_page"] = report["chapter_pages"].get(ANSWERS_ID)

    report["pages"] = len(PdfReader(str(pdf)).pages)
    report["chapters"] = [{k: c[k] for k in ("doc", "title", "number", "part")}
                          | {"page": report["chapter_pages"].get(c["id"])}
                          for c in info["chapters"]]
    report["seconds"] = round(time.perf_counter() - start, 1)
    (out_dir / "report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return pdf
