"""One symbol, one meaning: every symbol the book's math uses is on the notation page.

The chapters (``book/NN_*.md``), the assignments, the glossary and the package's docstrings
(``:math:`` roles and ``.. math::`` blocks) are read as text; nothing is executed. Their math
(``$...$``, ``$$...$$``, ``{math}`` blocks and roles, and ``$...$`` in code cells, which
Matplotlib typesets) is tokenised, and every *symbol* is reduced to its shape: the base (a
letter, a Greek letter, ``\\ell``, or a decorated letter such as ``\\mathcal{R}`` or
``\\bar e``) with its index structure, the index letters abstracted. So ``M^{(r)}_{n,p}``,
``M^{(s)}_{1,2}`` and ``M^{(r)}_{np}`` are all ``M^{(.)}_{..}``, ``\\phi_{j|n}`` is
``\\phi_{.|.}`` and ``\\eta_r`` is ``\\eta_{.}``; a subscript that is not an index keeps its
name: ``a_\\rho`` is ``a_{\\rho}``, ``D_o`` is ``D_{o}``, ``G^{\\mathrm{err}}_{ir}`` is
``G^{err}_{..}``. Powers, transposes, primes and stars are operations, not part of a symbol;
a hat is an estimate of the symbol under it.

``book/notation.md`` defines the symbols of the first column of its tables (and the sizes of
its index table): the symbol left of any ``=`` in each ``$...$`` there. The tests fail

* on a symbol the page does not define, listing where it is used (page and line);
* when the page gives one shape two rows (two meanings), except for ``DOUBLE_DUTY``;
* when a chapter's own table of letters (a table with a ``here``, ``this book`` or ``this
  chapter`` column) glosses one of the page's symbols in words that are not the page's: at
  least half of the content words of the chapter's gloss (crudely stemmed) must be in the
  page's gloss of that symbol;
* when ``ALLOWED`` names a letter that is no longer used where it says, or that the page defines.

Errata boxes and the source columns of the tables of letters quote the sources' letters, which
are not the book's, and are not read; nor is the errata appendix, which quotes them too.
``ALLOWED`` lists the letters local to one derivation, exercise or figure of one page.
The docstrings are held to the same page: a source's letters appear there only as code
(``theta_j``), never as math.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

from support import BOOK, ROOT

NOTATION = BOOK / "notation.md"

# Letters local to one derivation, exercise or figure, each defined where it is used:
# (shape, page) -> what it is there. Nothing here may be used elsewhere under this key.
ALLOWED: dict[tuple[str, str], str] = {
    ("\\delta", "02_naive_bayes.md"): "the blur of the weights in one figure and its exercise",
    ("p_{.}", "03_em.md"): "p_n, the probability of a batch under coin n, in the coin example",
    ("\\theta_{M}", "03_em.md"): "the full M-step in the exercise on generalised EM",
    ("\\bar{q}", "03_em.md"): "a fixed responsibility in the exercise on symmetric starts",
    ("f_{.}", "03_em.md"): "f_s, the observed frequencies in the same exercise",
    ("f", "03_em.md"): "any function of the hidden state in the definition of an average",
    ("n_{cell}", "03_em.md"): "the count of one cell of the table of observations",
    ("p_{cell}", "03_em.md"): "its probability (identifiability section)",
    ("\\varepsilon", "03_em.md"): "the step along a direction in one figure",
    ("\\mathbb{I}", "03_em.md"): "the York source's indicator, quoted in an exercise",
    ("a", "05_missing_labels.md"): "two label values a and b in one worked example",
    ("u", "05_missing_labels.md"): "the number of unlabelled items in one fixed-point argument",
    ("s_{.}", "06_smoothing.md"): "the log-scores of the log-sum-exp trick",
    ("u", "06_smoothing.md"): "the Beta integral's exponents u, v",
    ("z", "06_smoothing.md"): "the Beta integral's variable",
    ("C_{..}", "07_multilabel.md"): "the counts of one smoothed confusion row in an exercise",
    ("C_{..}", "crowdlearn/aggregation/mace.py"): "C_rp, the posterior mass of expert r's "
                                                  "labels p that are right (the trust update)",
    ("n_{..}", "crowdlearn/aggregation/mace.py"): "n_rp, the number of expert r's labels p",
    ("f", "crowdlearn/aggregation/mace.py"): "the objective of the trust update",
    ("\\Psi_{.}", "07_multilabel.md"): "the source's parameters, quoted in the list of slips",
    ("\\Psi^{old}_{.}", "07_multilabel.md"): "the same",
    ("\\pi", "07_multilabel.md"): "the source's confusion matrix, named to say it is not used",
    ("\\rho", "07_multilabel.md"): "a permutation of the classes in the identifiability argument",
    ("e^{(..)}_{.}", "07_multilabel.md"): "the answer indicators e^{(r,d)}_p of one SymPy check",
    ("\\eta", "08_logistic_annotators.md"): "the source's other uses of the letter, set aside",
    ("\\gamma", "08_logistic_annotators.md"): "gamma_r of the one annotator the explorer shows",
    ("\\mu", "08_logistic_annotators.md"): "the source's other use of the letter",
    ("u", "08_logistic_annotators.md"): "the argument of sigma(u)",
    ("f", "08_logistic_annotators.md"): "the source's objective f, in the list of slips",
    ("\\delta", "09_sparsity.md"): "a small move of beta_j in one argument",
    ("\\mu", "09_sparsity.md"): "a soft target mu_i, the index dropped in one sentence",
    ("V", "10_model_selection.md"): "the source's V = e-bar of one item, in its Lemma 1",
    ("f_{\\lambda}", "10_model_selection.md"): "the source's function of one item in its Lemma 1",
    ("f", "10_model_selection.md"): "the same, without its lambda",
    ("\\zeta", "10_model_selection.md"): "the threshold of one family of rules",
    ("\\delta", "10_model_selection.md"): "the deviation in the source's uniform bound",
    ("E_{x}", "10_model_selection.md"): "an expectation over the features",
    ("e_{.}", "10_model_selection.md"): "e_1, e_2: two experts' error indicators, one SymPy check",
    ("a", "14_next_label.md"): "an accuracy in one exercise",
    ("Y", "assignments/a5_choosing_penalty.md"): "one label, in one case analysis",
    ("Z", "assignments/a5_choosing_penalty.md"): "the truth, in the same case analysis",
    ("z", "assignments/a5_choosing_penalty.md"): "a classifier's label, in the same case analysis",
    ("e_{.}", "assignments/a4_logistic_gradients.md"): "the j-th unit vector of a difference",
    ("f", "assignments/a4_logistic_gradients.md"): "the function a difference differentiates",
    ("u", "assignments/a4_logistic_gradients.md"): "the argument of sigma(u)",
    ("\\mu", "assignments/a4_logistic_gradients.md"): "mu_i of the one item of a SymPy check",
}

GREEK = {
    "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta",
    "vartheta", "iota", "kappa", "lambda", "mu", "nu", "xi", "pi", "varpi", "rho", "varrho",
    "sigma", "varsigma", "tau", "upsilon", "phi", "varphi", "chi", "psi", "omega", "Gamma",
    "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Upsilon", "Phi", "Psi", "Omega", "ell",
}
# Decorations that make a new symbol of the letter under them.
DECORATIONS = {"tilde", "bar", "mathcal", "mathbb", "mathbf", "boldsymbol", "bm", "vec",
               "check", "overline", "widetilde", "mathscr", "mathfrak", "dot", "breve"}
# Decorations that do not: a hat is an estimate (notation page, "conventions").
TRANSPARENT = {"hat", "widehat"}
# Commands whose braced argument is words or layout, not symbols.
WORDS = {"text", "mathrm", "operatorname", "textrm", "texttt", "textbf", "textit", "mbox",
         "label", "tag", "begin", "end", "hspace", "vspace", "color", "ref", "eqref",
         "mathit", "textsf", "mathsf", "mathtt", "rm"}
TOKEN = re.compile(r"\\[A-Za-z]+|\\.|[A-Za-z]|[0-9]+|\S", re.S)
# The index letters of the notation page, their sizes (an index at its last value: phi_N), and
# the few indices of one chapter (c: a state of C in chapter 3; g: a team, l: a label and u: a
# row of the docstrings' solvers, in the assignments): a subscript made of these (or digits)
# is an index; another single letter in a subscript is a name (D_o, \lambda_w, \theta_M).
INDEX_LETTERS = set("irsnpjdtbk") | set("mRNDB") | set("cglua")


def tokens(tex: str) -> list[str]:
    return TOKEN.findall(tex)


def _group(toks: list[str], k: int) -> tuple[list[str], int]:
    """The argument starting at toks[k]: a braced group (without braces) or one token."""
    while k < len(toks) and toks[k] in ("\\,", "\\;", "\\!", "\\ "):
        k += 1
    if k >= len(toks):
        return [], k
    if toks[k] != "{":
        return [toks[k]], k + 1
    depth, start = 0, k
    while k < len(toks):
        depth += {"{": 1, "}": -1}.get(toks[k], 0)
        k += 1
        if depth == 0:
            return toks[start + 1 : k - 1], k
    return toks[start + 1 :], k


def _word(toks: list[str]) -> str | None:
    """``\\mathrm{err}`` or ``\\text{max}`` as a script: the word, else None."""
    if len(toks) >= 2 and toks[0].startswith("\\") and toks[0][1:] in WORDS and toks[1] == "{":
        inner, end = _group(toks, 1)
        if end == len(toks):  # the word alone, not e^{\text{vote}_i(n)}
            return "".join(t for t in inner if t.isalnum())
    return None


def _slots(toks: list[str]) -> str:
    """A subscript's index structure: ``ir`` -> ``..``, ``n,p`` -> ``.,.``, ``j|n`` -> ``.|.``."""
    toks = [t for t in toks if t not in ("\\,", "\\;", "\\!", "\\ ", "'", "\\prime")]
    word = _word(toks)
    if word is not None:
        return word
    if len(toks) == 1 and toks[0].startswith("\\") and toks[0][1:] in GREEK:
        return toks[0]
    if len(toks) == 1 and re.fullmatch(r"[A-Za-z]", toks[0]) and toks[0] not in INDEX_LETTERS:
        return toks[0]  # a name, not an index: D_o, \\lambda_w, \\theta_M
    for sep in (",", "|", "\\mid"):
        parts, part, depth = [], [], 0
        for t in toks:
            depth += {"{": 1, "}": -1}.get(t, 0)
            if t == sep and depth == 0:
                parts.append(part)
                part = []
            else:
                part.append(t)
        if parts:
            parts.append(part)
            return ("|" if sep != "," else "").join(_slots(p) for p in parts)  # n,p ~ np
    if toks and all(re.fullmatch(r"[A-Za-z]|[0-9]+", t) for t in toks):
        return "." * len(toks)
    return "."  # an expression such as i+1 fills one slot


def _superscript(toks: list[str]) -> str | None:
    """``(r)`` -> ``(.)``, ``(r,d)`` -> ``(.,.)``, a word kept; powers and transposes: None."""
    toks = [t for t in toks if t not in ("\\,", "\\;", "\\!", "\\ ")]
    word = _word(toks)
    if word is not None:
        return word
    if len(toks) >= 2 and toks[0] == "(" and toks[-1] == ")":
        return "(" + _slots(toks[1:-1]) + ")"
    if len(toks) >= 2 and all(re.fullmatch(r"[A-Za-z]", t) for t in toks):
        return "".join(toks)  # a word: Psi^{old}
    return None


def symbols(tex: str) -> list[str]:
    """The shapes of the symbols of one piece of math, in order (with repeats)."""
    found: list[str] = []
    _scan(tokens(tex), found)
    return found


def _scan(toks: list[str], found: list[str], top: list[str] | None = None) -> None:
    """Append the shapes of ``toks`` to ``found``, and those not inside a script to ``top``."""
    k = 0
    while k < len(toks):
        t = toks[k]
        base = None
        if t.startswith("\\") and t[1:] in WORDS:
            _, k = _group(toks, k + 1)
            if t in ("\\begin", "\\end") and k < len(toks) and toks[k] == "{":
                _, k = _group(toks, k)  # \begin{array}{cc}
            while k < len(toks) and toks[k] in ("_", "^"):  # a named quantity's scripts
                arg, k = _group(toks, k + 1)
                _scan(arg, found)
            continue
        if t.startswith("\\") and t[1:] in GREEK:
            base, k = t, k + 1
        elif t.startswith("\\") and t[1:] in TRANSPARENT:
            inner, k = _group(toks, k + 1)
            inner_found: list[str] = []
            _scan(inner, inner_found)
            if len(inner_found) != 1:
                found.extend(inner_found)
                continue
            base = inner_found[0]
        elif t.startswith("\\") and t[1:] in DECORATIONS:
            inner, k = _group(toks, k + 1)
            inner = [x for x in inner if x not in ("\\,", "\\ ")]
            if len(inner) != 1:
                _scan(inner, found)
                continue
            base = f"{t}{{{inner[0]}}}"
        elif re.fullmatch(r"[A-Za-z]", t):
            base, k = t, k + 1
        else:
            k += 1
            continue
        sub = sup = None
        scripts: list[list[str]] = []
        while k < len(toks) and toks[k] in ("_", "^", "'"):
            kind = toks[k]
            if kind == "'":
                k += 1
                continue
            arg, k = _group(toks, k + 1)
            script = _slots(arg) if kind == "_" else _superscript(arg)
            if script is None or "." in script:
                scripts.append(arg)  # index letters and exponents are symbols too, labels not
            if kind == "_" and sub is None:
                sub = script
            elif kind == "^" and sup is None:
                sup = script
        shape = base
        if sup:
            shape += "^{" + sup + "}"
        if sub:
            shape += "_{" + sub + "}"
        found.append(shape)
        if top is not None:
            top.append(shape)
        for arg in scripts:
            _scan(arg, found)


# ---------------------------------------------------------------------------------------------
# Where the math is


FENCE = re.compile(r"^(\s*)(`{3,}|:{3,})\s*(\{[\w:-]+\})?\s*(.*)$")
DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.S)
INLINE = re.compile(r"(?<![\\$])\$(?![\$\s])((?:[^$\n]|\n(?!\s*\n))+?)(?<![\\\s])\$(?!\$)")
CODE_MATH = re.compile(r"\$([^$\n]*)\$")
FIELD = re.compile(r"(?<!\{)\{(?!\{)[^{}]*\}(?!\})")  # an f-string's replacement field
MATH_ROLE = re.compile(r"\{math\}`([^`]+)`")
CODE_SPAN = re.compile(r"(`+)(?!\{).+?\1", re.S)


def _blank(text: str) -> str:
    """Same length and newlines, no content: keeps offsets and line numbers."""
    return re.sub(r"[^\n]", " ", text)


OURS = ("here", "this book", "this chapter")


def source_columns(header: list[str]) -> list[int]:
    """The columns of a table of letters that hold a source's letters (none in other tables)."""
    names = [h.strip().lower() for h in header]
    if not any(h in OURS for h in names):
        return []
    return [c for c, h in enumerate(names) if h not in OURS and h not in ("meaning", "")
            and "crowdlearn" not in h]


def _strip_source_columns(lines: list[str]) -> list[str]:
    """Blank the columns of a table of letters that hold a source's letters."""
    out, k = list(lines), 0
    while k < len(out):
        if out[k].lstrip().startswith("|") and k + 1 < len(out) and RULE.match(out[k + 1]):
            header = [c.strip() for c in out[k].strip().strip("|").split("|")]
            drop = set(source_columns(header))
            j = k
            while j < len(out) and out[j].lstrip().startswith("|"):
                if drop:
                    cells = out[j].strip().strip("|").split("|")
                    cells = [_blank(c) if c_ in drop else c for c_, c in enumerate(cells)]
                    out[j] = "|" + "|".join(cells) + "|"
                j += 1
            k = j
        k += 1
    return out


def markdown_math(path: Path) -> list[tuple[int, str]]:
    """(line, tex) for every piece of math of a MyST page, errata boxes and source letters out."""
    lines = path.read_text(encoding="utf-8").splitlines()
    prose = [""] * len(lines)
    found: list[tuple[int, str]] = []
    stack: list[tuple[str, str]] = []  # (fence, kind): kind in prose, code, math, errata
    for number, line in enumerate(lines):
        match = FENCE.match(line)
        inside = stack[-1][1] if stack else "prose"
        closes = (match and stack and match.group(2)[0] == stack[-1][0][0]
                  and len(match.group(2)) >= len(stack[-1][0])
                  and not match.group(3) and not match.group(4).strip())
        if closes:
            stack.pop()
            continue
        if match and inside in ("prose", "errata"):
            directive = (match.group(3) or "").strip("{}")
            title = match.group(4)
            if inside == "errata":
                kind = "errata"
            elif directive in ("code-cell",) or (not directive and match.group(2)[0] == "`"):
                kind = "code"
            elif directive == "math":
                kind = "math"
            elif directive == "admonition" and title.lower().startswith("errat"):
                kind = "errata"
            elif directive in ("erratum",):
                kind = "errata"
            else:
                kind = "prose"
            stack.append((match.group(2), kind))
            continue
        if inside == "code":
            line = line.replace("\\\\", "\\")  # "$\\ell$" in a plain string
            if re.search(r"\b[rf]?f[r]?[\"']", line):  # an f-string: fields out, braces halved
                line = FIELD.sub("", line).replace("{{", "{").replace("}}", "}")
            found.extend((number + 1, m.group(1)) for m in CODE_MATH.finditer(line)
                         if re.search(r"[A-Za-z\\]", m.group(1)))
        elif inside == "math":
            if not line.lstrip().startswith(":"):
                found.append((number + 1, line))
        elif inside == "prose":
            if re.match(r"^\s*:class:\s*.*erratum", line) and stack:
                stack[-1] = (stack[-1][0], "errata")
                continue
            prose[number] = line
    text = "\n".join(_strip_source_columns(prose))
    text = MATH_ROLE.sub(lambda m: "$" + m.group(1) + "$", text)
    text = CODE_SPAN.sub(lambda m: _blank(m.group(0)), text)
    for pattern in (DISPLAY, INLINE):
        for m in pattern.finditer(text):
            found.append((text.count("\n", 0, m.start()) + 1, m.group(1)))
        text = pattern.sub(lambda m: _blank(m.group(0)), text)
    return found


def docstring_math(path: Path) -> list[tuple[int, str]]:
    """(line, tex) of the ``:math:`` roles and ``.. math::`` blocks of a module's docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        doc = ast.get_docstring(node, clean=True)
        if not doc:
            continue
        start = node.body[0].lineno if node.body else 1
        lines = doc.splitlines()
        for k, line in enumerate(lines):
            for m in re.finditer(r":math:`([^`]+)`", line):
                found.append((start + k, m.group(1)))
            block = re.match(r"^(\s*)\.\. math::\s*(.*)$", line)
            if block:
                if block.group(2).strip():
                    found.append((start + k, block.group(2)))
                indent = len(block.group(1))
                for j in range(k + 1, len(lines)):
                    body = lines[j]
                    if body.strip() and len(body) - len(body.lstrip()) <= indent:
                        break
                    if body.strip() and not body.strip().startswith(":"):
                        found.append((start + j, body))
    return found


def book_sources() -> list[Path]:
    pages = sorted(BOOK.glob("[0-9][0-9]_*.md")) + sorted((BOOK / "assignments").glob("*.md"))
    return pages + [BOOK / "glossary.md"]


def modules() -> list[Path]:
    return sorted(p for p in (ROOT / "crowdlearn").rglob("*.py") if "static" not in p.parts)


def uses() -> dict[str, list[str]]:
    """shape -> the places (``page:line`` or ``module:line``) that use it."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in book_sources():
        for line, tex in markdown_math(path):
            for shape in dict.fromkeys(symbols(tex)):
                where[shape].append(f"{path.relative_to(BOOK)}:{line}")
    for path in modules():
        for line, tex in docstring_math(path):
            for shape in dict.fromkeys(symbols(tex)):
                where[shape].append(f"{path.relative_to(ROOT)}:{line}")
    return where


# ---------------------------------------------------------------------------------------------
# The notation page

CELL_SPLIT = re.compile(r"(?<!\\)\|")
STOP = {"the", "of", "a", "an", "and", "or", "on", "in", "to", "is", "by", "its", "it", "that",
        "for", "with", "as", "at", "be", "from", "this", "these", "their", "each", "every",
        "which", "what", "when", "one", "all", "code", "here", "book", "source", "rather",
        "than", "gives", "give", "given", "running", "over"}
SYNONYMS = {"worker": "expert", "annotator": "expert", "rater": "expert", "labeller": "expert",
            "task": "item", "truth": "true", "logarithm": "log", "children": "child"}


def _cells(row: str) -> list[str]:
    return [c.strip() for c in CELL_SPLIT.split(row.strip().strip("|"))]


RULE = re.compile(r"^\s*\|[-:| ]+\|\s*$")  # a table's header rule


def tables(text: str) -> list[tuple[int, list[str], list[tuple[int, list[str]]]]]:
    """(line of the header, header cells, [(line, cells)]) for every pipe table of a page."""
    lines = text.splitlines()
    found, k = [], 0
    while k + 1 < len(lines):
        if lines[k].lstrip().startswith("|") and RULE.match(lines[k + 1]):
            header, rows, j = _cells(lines[k]), [], k + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                rows.append((j + 1, _cells(lines[j])))
                j += 1
            found.append((k + 1, header, rows))
            k = j
        else:
            k += 1
    return found


def head(tex: str) -> str | None:
    """The symbol a defining formula defines: the first one left of ``=``; None for operators."""
    left = re.split(r"=|\\sim\b|\\in\b|\\mapsto\b", tex, maxsplit=1)[0].strip()
    if re.match(r"\\(mathrm|operatorname|text|log)\b", left):
        return None
    found = symbols(left)
    return found[0] if found else None


def only_symbol(tex: str) -> str | None:
    """The symbol a cell names when it names one: ``x^{(i)}_j``, ``\\mathcal{R}(\\lambda)``,
    ``\\pi_i = \\sigma(a_i)``; None for an expression: ``\\sigma(\\beta_0 + \\beta^\\top x)``."""
    left = re.split(r"=", tex, maxsplit=1)[0].strip()
    left = re.sub(r"\\left|\\right|\\big", "", left)
    left = re.sub(r"\([^()+\-]*\)\s*$", "", left).strip()  # an argument list, not a sum
    toks = tokens(left)
    if any(t in ("+", "-", "\\cdot", "\\sqrt", "\\frac", "\\sum") or t.isdigit() for t in toks):
        return None
    top: list[str] = []
    _scan(toks, [], top)
    return top[0] if len(top) == 1 else None


def words(text: str) -> set[str]:
    """The content words of a gloss, math and markup removed, synonyms merged."""
    text = re.sub(r"\$[^$]*\$|`[^`]*`|\{[a-z:]+\}|\([^)]*\)", " ", text.lower())
    out = set()
    for word in re.findall(r"[a-z]+", text):
        if len(word) > 4:  # a crude stem: report, reports, reported; penalty, penalties
            word = re.sub(r"ies$", "y", word)
            word = re.sub(r"(?<!s)(ations?|ing|ed|es|e|s)$", "", word)
        word = SYNONYMS.get(word, word)
        if word not in STOP and len(word) > 2:
            out.add(word)
    return out


def definitions() -> dict[str, list[tuple[int, str]]]:
    """shape -> [(line, gloss)] of every row of the notation page that defines it."""
    defined: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for _, header, rows in tables(NOTATION.read_text(encoding="utf-8")):
        names = [h.lower() for h in header]
        columns = [0] + [c for c, h in enumerate(names) if h == "size"]
        for line, cells in rows:
            gloss = cells[1] if len(cells) > 1 else ""
            for c in columns:
                if c >= len(cells):
                    continue
                for tex in re.findall(r"\$([^$]+)\$", cells[c]):
                    shape = head(tex)
                    rows_of_shape = defined.get(shape, [])
                    if shape and all(row != line for row, _ in rows_of_shape):
                        if c == 0 or not rows_of_shape:
                            size = f"number of {gloss}"
                            defined[shape].append((line, gloss if c == 0 else size))
    return defined


def translation_glosses() -> list[tuple[str, str, str]]:
    """(where, shape, gloss) from the chapters' tables of letters (source | here | meaning)."""
    out = []
    for path in book_sources():
        for line0, header, rows in tables(path.read_text(encoding="utf-8")):
            names = [h.lower() for h in header]
            ours = next((c for c, h in enumerate(names) if h in OURS), None)
            if ours is None:
                continue
            meaning = next((c for c, h in enumerate(names) if h in ("meaning", "")), None)
            for line, cells in rows:
                gloss = (cells[meaning] if meaning is not None
                         else re.sub(r"\$[^$]*\$", " ", cells[ours]))
                named = re.findall(r"\$([^$]+)\$", cells[ours])
                parts = re.split(r"[,;]", re.sub(r"\$[^$]*\$|\([^)]*\)", "", gloss))
                for k, tex in enumerate(named):
                    shape = only_symbol(tex)
                    if shape and shape not in DOUBLE_DUTY:
                        part = parts[k] if len(parts) == len(named) else gloss
                        out.append((f"{path.relative_to(BOOK)}:{line}", shape, part))
    return out


# The page gives a letter two entries only where the two uses cannot be confused: letter -> why.
DOUBLE_DUTY = {
    "p": "the index of a reported class, and a density or mass function, always written p(...)",
    "B": "the number of blocks (chapter 13) and the zeros of a Bernoulli count A / (A + B) "
    "(chapters 2, 6, 11), which never meet in one chapter",
}


def _missing(places_by_shape: dict[str, list[str]]) -> list[str]:
    defined = definitions()
    lines = []
    for shape, places in sorted(places_by_shape.items()):
        places = [p for p in places if (shape, p.rsplit(":", 1)[0]) not in ALLOWED]
        if shape in defined or not places:
            continue
        shown = ", ".join(sorted(set(places), key=places.index)[:6])
        more = f" and {len(set(places)) - 6} more" if len(set(places)) > 6 else ""
        lines.append(f"{shape}: {shown}{more}")
    return lines


def _uses(select) -> dict[str, list[str]]:
    return {shape: [p for p in places if select(p)] for shape, places in USES.items()
            if any(select(p) for p in places)}


USES = uses()


def test_every_symbol_of_the_book_is_on_the_notation_page():
    missing = _missing(_uses(lambda place: not place.startswith("crowdlearn/")))
    assert not missing, (
        "symbols the notation page (book/notation.md) does not define; add a row to its tables "
        "or rename them to the page's letters:\n" + "\n".join(missing)
    )


def test_every_symbol_of_the_docstrings_is_on_the_notation_page():
    missing = _missing(_uses(lambda place: place.startswith("crowdlearn/")))
    assert not missing, (
        "symbols of the package's docstrings that the notation page does not define:\n"
        + "\n".join(missing)
    )


def test_the_notation_page_defines_each_symbol_once():
    twice = {shape: rows for shape, rows in definitions().items()
             if len(rows) > 1 and shape not in DOUBLE_DUTY}
    assert not twice, "defined in more than one row of notation.md: " + repr(twice)


def test_the_chapters_tables_of_letters_gloss_symbols_as_the_notation_page_does():
    defined = definitions()
    wrong = []
    for where, shape, gloss in translation_glosses():
        if shape not in defined:
            wrong.append(f"{where}: {shape} is not on the notation page")
            continue
        ours = words(gloss)
        page = set().union(*(words(g) for _, g in defined[shape]))
        shared = ours & page
        if ours and len(shared) < 0.5 * len(ours):
            wrong.append(f"{where}: {shape} glossed {sorted(ours)}; the page: {sorted(page)}")
    assert not wrong, "\n".join(wrong)


def test_the_allow_list_holds_only_symbols_still_in_use_and_undefined():
    used = {(shape, place.rsplit(":", 1)[0]) for shape, places in USES.items() for place in places}
    assert not set(ALLOWED) - used, sorted(set(ALLOWED) - used)
    defined = definitions()
    assert not {shape for shape, _ in ALLOWED} & set(defined), "allowed but on the notation page"
