/* Search results (search.html): the snippet under each result is cut from the page's text, in
   which math is still TeX source (\(\sum_{i} q_{it}\)). The search page does not typeset math,
   and a snippet may cut a formula in half, so every formula of the page's text is made plain
   text before the snippet is chosen: \sum_{i} q_{it} reads "∑_i q_it", \frac{a}{b} "a/b"
   (commands become their symbols; braces and the other markup go).
   tests/test_book_browser.py checks the snippets of two searches. */
(function () {
  "use strict";
  var SYMBOLS = {
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε", zeta: "ζ",
    eta: "η", theta: "θ", vartheta: "ϑ", iota: "ι", kappa: "κ", lambda: "λ", mu: "μ", nu: "ν",
    xi: "ξ", pi: "π", rho: "ρ", sigma: "σ", tau: "τ", upsilon: "υ", phi: "φ", varphi: "φ",
    chi: "χ", psi: "ψ", omega: "ω", Gamma: "Γ", Delta: "Δ", Theta: "Θ", Lambda: "Λ", Xi: "Ξ",
    Pi: "Π", Sigma: "Σ", Phi: "Φ", Psi: "Ψ", Omega: "Ω", sum: "∑", prod: "∏", int: "∫",
    infty: "∞", partial: "∂", nabla: "∇", cdot: "·", cdots: "⋯", ldots: "…", dots: "…",
    times: "×", le: "≤", leq: "≤", ge: "≥", geq: "≥", ne: "≠", neq: "≠", approx: "≈",
    propto: "∝", sim: "∼", in: "∈", notin: "∉", subset: "⊂", subseteq: "⊆", cup: "∪",
    cap: "∩", to: "→", rightarrow: "→", leftarrow: "←", mapsto: "↦", mid: "∣", pm: "±",
    log: "log", exp: "exp", max: "max", min: "min", arg: "arg", det: "det", top: "⊤",
    ell: "ℓ", emptyset: "∅", forall: "∀", exists: "∃", neg: "¬", land: "∧", lor: "∨",
    Rightarrow: "⇒", iff: "⇔", equiv: "≡", langle: "⟨", rangle: "⟩", lVert: "‖", rVert: "‖",
    Vert: "‖", "|": "‖", quad: " ", qquad: " ", ",": " ", ";": " ", ":": " ", "!": "",
    "{": "{", "}": "}", "%": "%", "_": "_", "&": "&", "#": "#", "\\": " "
  };

  // commands whose own name is not shown (their argument, or nothing, is)
  var DROPPED = new RegExp("\\\\(?:" + [
    "operatorname", "mathrm", "mathbf", "mathbb", "mathcal", "mathit", "boldsymbol", "text",
    "textrm", "textit", "textbf", "bar", "hat", "tilde", "widehat", "widetilde", "overline",
    "underline", "vec", "dot", "ddot", "left", "right", "big", "Big", "bigg", "Bigg", "bigl",
    "bigr", "Bigl", "Bigr", "displaystyle", "tfrac", "dfrac", "frac", "sqrt", "begin", "end"
  ].join("|") + ")\\b\\*?", "g");

  var FRACTION = /\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g;
  var WORDS = /^(log|exp|max|min|arg|det|mid|in|to|le|leq|ge|geq|approx|propto|sim|times)$/;

  function plain(tex) {
    var before;
    do {  // sub- and superscripts lose their braces: q_{it} reads q_it
      before = tex;
      tex = tex.replace(/([_^])\{([^{}]*)\}/g, "$1$2");
    } while (tex !== before);
    do {  // innermost fractions first: \frac{a}{b} reads a/b
      before = tex;
      tex = tex.replace(FRACTION, function (m, a, b) {
        var wrap = function (x) { return /^\s*[\w\\]+\s*$/.test(x) ? x : "(" + x + ")"; };
        return wrap(a) + "/" + wrap(b);
      });
    } while (tex !== before);
    return tex
      .replace(DROPPED, " ")
      .replace(/\\([A-Za-z]+|.)/g, function (m, name) {
        if (!Object.prototype.hasOwnProperty.call(SYMBOLS, name)) return "";
        return WORDS.test(name) ? " " + SYMBOLS[name] + " " : SYMBOLS[name];
      })
      .replace(/[{}]/g, "")
      .replace(/\s*&\s*/g, " ")
      .replace(/\s+/g, " ")
      .trim();
  }

  /* every complete formula made plain text; a formula cut off at either end of the text loses
     its delimiter too */
  function withoutTeX(text) {
    return text
      .replace(/\\\(([\s\S]*?)\\\)/g, function (m, tex) { return plain(tex); })
      .replace(/\\\[([\s\S]*?)\\\]/g, function (m, tex) { return plain(tex); })
      .replace(/\$\$([\s\S]*?)\$\$/g, function (m, tex) { return plain(tex); })
      .replace(/\\[([]([\s\S]*)$/, function (m, tex) { return plain(tex); })
      .replace(/\\[)\]]/g, " ");
  }
  window.clSearchSnippetText = withoutTeX;

  function install() {
    var search = typeof Search !== "undefined" ? Search : window.Search;  // eslint-disable-line no-undef
    if (!search || typeof search.htmlToText !== "function" || search.clPlainMath) return;
    var original = search.htmlToText;
    search.htmlToText = function () {
      return withoutTeX(original.apply(this, arguments));
    };
    search.clPlainMath = true;
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", install);
  else install();
})();
