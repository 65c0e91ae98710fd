/* Wide content scrolls sideways in a box of its own, and every such box can be reached and
   scrolled with the keyboard (tabindex 0, a role and a name for screen readers; axe-core's
   rule scrollable-region-focusable), shows a focus outline (crowdlearn.css) and a shadow on
   each side that has more to show (data-cl-more = "start", "end" or "both").

   * display equations: Sphinx's div.math is the box (MathJax's own container does not scroll);
   * code: the theme makes a scrolling <pre> focusable; here it gets the cue too;
   * tables, cell outputs and inline formulas wider than their line: the same as equations;
   * figures: on a narrow screen a figure is never shown below the scale at which its tick
     labels stay 9 CSS px high (window.clFigureMinScale, set by book/_ext/offline_book.py from
     book/matplotlibrc); a wider figure scrolls in a box of its own.
   tests/test_book_layout.py measures all of this at 1280 and 390 px. */
(function () {
  "use strict";

  function article() {
    return document.querySelector("article.bd-article") || document.querySelector("main");
  }

  function figureMinScale() {
    var s = Number(window.clFigureMinScale);
    return s > 0 && s <= 1 ? s : 0.6;  // 9 px / (11 pt at 100 dpi), book/matplotlibrc
  }

  /* every figure drawn by a cell (not the explorers' own images) sits in a scroll box, also
     one a cell's metadata turns into a numbered <figure> with a caption */
  function wrapFigures(root) {
    root.querySelectorAll(".cell_output > img, .cell_output .output > img, " +
                          ".cell_output figure > img").forEach(function (img) {
      if (img.closest(".cl-explorer") || img.parentElement.classList.contains("cl-figure-scroll")) return;
      var box = document.createElement("div");
      box.className = "cl-figure-scroll";
      img.parentNode.insertBefore(box, img);
      box.appendChild(img);
      var size = function () {
        if (!img.naturalWidth) return;
        img.style.setProperty("--cl-figure-min-width",
          Math.ceil(img.naturalWidth * figureMinScale()) + "px");
        img.dataset.clMinScale = String(figureMinScale());
        update();
      };
      if (img.complete) size(); else img.addEventListener("load", size, { once: true });
    });
  }

  /* Code on a phone wraps instead of scrolling: every line of a code cell (and of a Python or
     shell block in the prose) becomes a span of its own, so that crowdlearn.css can wrap it
     below 600 px with a hanging indent (a continuation starts HANG characters right of its
     line's own indentation, so it cannot be read as a new statement). Pygments' spans are
     flat; one that holds a newline (a docstring) is cut in two with the same class. The
     newlines stay between the lines, so the text (and what the copy button copies) is the
     code as it was. */
  var HANG = 4;
  var CODE = ".cell_input div.highlight pre, div.highlight-python div.highlight pre, " +
             "div.highlight-ipython3 div.highlight pre, div.highlight-bash div.highlight pre, " +
             "div.highlight-default div.highlight pre";

  function splitLines(pre) {
    if (pre.dataset.clLines) return;
    var lines = [[]];
    Array.prototype.slice.call(pre.childNodes).forEach(function (node) {
      var parts = node.textContent.split("\n");
      parts.forEach(function (part, k) {
        if (k > 0) lines.push([]);
        var piece = part;
        if (!piece) return;
        if (node.nodeType === 1) {
          var copy = node.cloneNode(false);
          copy.textContent = piece;
          lines[lines.length - 1].push(copy);
        } else {
          lines[lines.length - 1].push(document.createTextNode(piece));
        }
      });
    });
    var ends = lines.length > 1 && !lines[lines.length - 1].length;  // a final newline
    if (ends) lines.pop();
    pre.textContent = "";
    lines.forEach(function (nodes, k) {
      var line = document.createElement("span");
      line.className = "cl-line";
      var text = nodes.map(function (n) { return n.textContent; }).join("");
      var indent = text.length - text.replace(/^ +/, "").length;
      line.style.setProperty("--cl-indent", indent + HANG + "ch");
      nodes.forEach(function (n) { line.appendChild(n); });
      pre.appendChild(line);
      if (k < lines.length - 1 || ends) pre.appendChild(document.createTextNode("\n"));
    });
    pre.dataset.clLines = String(lines.length);
  }

  function boxes(root) {
    var found = [];
    root.querySelectorAll("div.math, div.highlight pre, .cl-figure-scroll, " +
        ".pst-scrollable-table-container, .table-wrapper, .cell_output > .output, " +
        "mjx-container:not(div.math > mjx-container)").forEach(function (el) {
      found.push(el);
    });
    return found;
  }

  function describe(el) {
    if (el.matches("div.math")) {
      var no = el.querySelector(".eqno");
      var label = no ? "Equation " + no.textContent.replace(/[^\d.()]/g, "") : "Equation";
      return label + ", scrolls sideways";
    }
    if (el.matches(".cl-figure-scroll")) return "Figure, scrolls sideways";
    if (el.matches(".pst-scrollable-table-container, .table-wrapper")) return "Table, scrolls sideways";
    if (el.matches(".cell_output > .output")) return "Output, scrolls sideways";
    if (el.matches("mjx-container")) {
      return (el.getAttribute("display") === "true" ? "Equation" : "Formula") + ", scrolls sideways";
    }
    return "Scrolls sideways";
  }

  var INLINE = "mjx-container:not([display='true'])";

  /* Which boxes scroll, in two passes that first read the whole layout and then write, so
     that a page with hundreds of formulas is laid out a few times, not once per formula.
     An inline formula wider than its line scrolls in place (class cl-wide-formula); a
     narrower one is left alone: a glyph's overhang must not make a formula a scroll box. */
  function markAll(els) {
    var inline = els.filter(function (el) { return el.matches(INLINE); });
    // the theme clips an inline formula at its span.math (max-width 100%, overflow hidden)
    var fits = inline.map(function (el) {
      var math = el.querySelector("mjx-math");
      var clip = el.parentElement;
      return !math || !clip || math.getBoundingClientRect().width <= clip.clientWidth + 1;
    });
    inline.forEach(function (el, i) { el.classList.toggle("cl-wide-formula", !fits[i]); });
    var state = els.map(function (el) {
      var max = el.scrollWidth - el.clientWidth;
      var wide = max > 1 && (!el.matches(INLINE) || el.classList.contains("cl-wide-formula"));
      return { wide: wide, more: wide ? more(el, max) : "" };
    });
    els.forEach(function (el, i) { write(el, state[i]); });
  }

  function more(el, max) {
    var left = Math.abs(el.scrollLeft);
    return max <= 1 ? "" : left <= 1 ? "end" : left >= max - 1 ? "start" : "both";
  }

  function write(el, s) {
    if (s.wide) {
      el.tabIndex = 0;
      // a <pre> keeps its own role (a name is not allowed on it); other boxes become a named group
      if (!el.matches("pre")) {
        el.setAttribute("role", "group");
        if (!el.hasAttribute("aria-label") || el.dataset.clNamed) {
          el.setAttribute("aria-label", describe(el));
          el.dataset.clNamed = "1";
        }
      }
      if (s.more) el.dataset.clMore = s.more; else delete el.dataset.clMore;
    } else {
      if (!el.matches("pre")) { el.removeAttribute("tabindex"); el.removeAttribute("role"); }
      if (el.dataset.clNamed) { el.removeAttribute("aria-label"); delete el.dataset.clNamed; }
      delete el.dataset.clMore;
    }
  }

  function cue(el) {
    var s = more(el, el.scrollWidth - el.clientWidth);
    if (s) el.dataset.clMore = s; else delete el.dataset.clMore;
  }

  /* mark every box now (the tests call this after resizing the window) */
  function refresh() {
    var root = article();
    if (root) markAll(boxes(root));
    document.documentElement.dataset.clScrollBoxes = String(window.innerWidth);
  }
  window.clScrollBoxes = { refresh: refresh };

  var pending = null;
  function update() {
    if (pending) return;
    pending = window.requestAnimationFrame(function () {
      pending = null;
      refresh();
    });
  }

  function start() {
    var root = article();
    if (!root) return;
    wrapFigures(root);
    root.querySelectorAll(CODE).forEach(splitLines);
    update();
    root.addEventListener("scroll", function (event) {
      var el = event.target;
      if (el instanceof Element && el.dataset.clMore !== undefined) cue(el);
    }, true);
    window.addEventListener("resize", update);
    // MathJax typesets after the page has loaded: measure again once it has
    var mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) mj.startup.promise.then(update);
    window.addEventListener("load", function () {
      var m = window.MathJax;
      if (m && m.startup && m.startup.promise) m.startup.promise.then(update);
      update();
    });
    if (window.ResizeObserver) new ResizeObserver(update).observe(root);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
