r"""Errata boxes in the chapters, and the errata appendix generated from them.

A chapter shows an error of a source document in an erratum box: an ``{admonition}`` of class
``erratum`` (same title, content and styling as any admonition) that also says which source it
corrects, where in that source the error is, and the correction in one line::

    (errata-02-1)=
    ````{admonition} Errata: the source drops the conditioning on $y$
    :class: warning erratum dropdown
    :source: jin2010multiple
    :where: §3, joint likelihood (middle line)
    :summary: $\prod_j p(x_j \mid y)$, not $\prod_j p(x_j)$; ...

    ...the box's text...
    ````

Written as an admonition so that every MyST reader renders it: Jupyter Book through this
extension, which replaces Sphinx's ``admonition`` directive by one that also accepts the three
options (and turns a box of class ``erratum`` into an erratum box), and jupyterlab-myst, which
shows a folded warning box with the title and ignores the options it does not know. The older
spelling ``{erratum}`` (the class is then implied) is still accepted.

``:source:`` is a bib key of the ``errata_sources`` setting; ``:where:`` and ``:summary:`` are one
line of MyST each (inline maths allowed; no cross-references, and no ``": "`` or ``" #"``,
which MyST's option parser reads as YAML). The ``(errata-...)=`` label in front of the box is
required: it is what the appendix links to. The box is folded (class ``dropdown``, which
sphinx-togglebutton and jupyterlab-myst both fold) unless its classes include ``open``; its
title then shows the one-line correction.

``{errata-index} <bib key>`` in the appendix is replaced, when the page is written, by a table
of every box of that source, in reading order: where in the source, the box's title (maths
intact, linked to the box) with the one-line correction, and the chapter (a ``{ref}`` to the
box's label, so an unresolved label fails a ``-n`` build).

The build warns (an error under ``-W``) when a box lacks a label, a source, a location or a
summary, names a source that is not in the ``errata_sources`` setting, when an admonition titled
"Errata..." / "Erratum..." is not an erratum box, when an admonition has erratum options but
not the class, when an ``errata-`` label sits on anything but a box, and when the boxes of a
source have no ``{errata-index}`` (or one has no boxes), so the appendix cannot silently drift
from the chapters.

Boxes are collected when a document is read (``doctree-read``), kept in the build environment
(merged from parallel readers with ``env-merge-info``, dropped with ``env-purge-doc``), and
the tables are built by a post-transform that runs before Sphinx resolves references.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.parsers.rst.directives.admonitions import Admonition
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

LABEL_PREFIX = "errata-"
FIELDS = ("source", "where", "summary")
# the sources a box may name in :source: (bib key -> short name); override with the
# errata_sources setting
DEFAULT_SOURCES = {
    "jin2010multiple": "Jin & Zhang (2010)",
    "york_mlap": "York MLAP examination answer",
    "zhang2018mcmli": "Zhang & Wu (2018)",
    "alger2016crowd": "Alger (2016)",
    "izbicki2013learning": "Izbicki & Stern (2013)",
}
TITLE_PREFIX = re.compile(r"^\s*Errat(?:a|um)(?:\s+\d+)?\s*:\s*")
ERRATA_TITLE = re.compile(r"^\s*Errat(?:a|um)\b")
ENV_BOXES = "errata_boxes"  # docname -> list of box records
ENV_INDEXES = "errata_indexes"  # docname -> list of (source key, line)


class erratum_meta(nodes.Invisible, nodes.Element):
    """A box's metadata while its document is read; removed at ``doctree-read``."""


class errata_index(nodes.General, nodes.Element):
    """Where ``{errata-index}`` stands until the post-transform replaces it."""


def _warn(message: str, location, subtype: str = "metadata") -> None:
    logger.warning(message, location=location, type="errata", subtype=subtype)


def _has_xref(parsed: list[nodes.Node]) -> bool:
    return any(
        isinstance(n, addnodes.pending_xref) or bool(list(n.findall(addnodes.pending_xref)))
        for n in parsed
        if isinstance(n, nodes.Element)
    )


class Erratum(Admonition):
    """``{admonition}`` plus ``:source:``, ``:where:`` and ``:summary:`` (the ``{erratum}``
    spelling: the box is an erratum box whatever its ``:class:``)."""

    option_spec = {
        **Admonition.option_spec,
        "source": directives.unchanged,
        "where": directives.unchanged,
        "summary": directives.unchanged,
    }

    def run(self):
        env = self.state.document.settings.env
        fields = {key: (self.options.pop(key, None) or "").strip() for key in FIELDS}
        result = super().run()
        box = result[0]
        if "erratum" not in box["classes"]:
            box["classes"].append("erratum")
        location = (env.docname, self.lineno)
        title = self.arguments[0]
        missing = [key for key in FIELDS if not fields[key]]
        if missing:
            _warn(
                f"erratum box {title!r} lacks {', '.join(':' + k + ':' for k in missing)} "
                "(the errata appendix needs source, where and summary)",
                location,
            )
        sources = env.config.errata_sources
        if fields["source"] and fields["source"] not in sources:
            _warn(
                f"erratum box {title!r}: unknown :source: {fields['source']!r} "
                f"(errata_sources: {', '.join(sources)})",
                location,
            )
        meta = erratum_meta(errata_source=fields["source"], line=self.lineno)
        for key in ("where", "summary"):
            part = nodes.inline(classes=[f"erratum-{key}"])
            if fields[key]:
                parsed, messages = self.state.inline_text(fields[key], self.lineno)
                if _has_xref(parsed):
                    _warn(f"erratum box {title!r}: no cross-references in :{key}:", location)
                part.extend(parsed)
                result.extend(messages)
            meta += part
        box += meta
        # folded by default (sphinx-togglebutton folds an admonition of class "dropdown"): the
        # reader sees the title and the one-line correction, and opens the box for the details
        if "open" not in box["classes"] and "dropdown" not in box["classes"]:
            box["classes"].append("dropdown")
        titles = [n for n in box.children if isinstance(n, nodes.title)]
        if titles and fields["summary"]:
            teaser = nodes.inline(classes=["erratum-teaser"])
            teaser += nodes.Text(" Correction: ")
            parsed, _ = self.state.inline_text(fields["summary"], self.lineno)
            teaser.extend(parsed)
            titles[0] += teaser
        return result


class AdmonitionOrErratum(Erratum):
    """Sphinx's ``{admonition}``; with ``erratum`` among its classes, an erratum box (see the
    module docstring). Erratum options on an admonition without that class are an error."""

    def run(self):
        if "erratum" in self.options.get("class", ()):
            return super().run()
        given = [key for key in FIELDS if key in self.options]
        for key in given:
            self.options.pop(key)
        result = Admonition.run(self)
        if given:
            env = self.state.document.settings.env
            _warn(
                f"admonition {self.arguments[0]!r} has {', '.join(':' + k + ':' for k in given)} "
                "but not the class erratum (write :class: warning erratum dropdown)",
                (env.docname, self.lineno),
                "markup",
            )
        return result


class ErrataIndex(SphinxDirective):
    """``{errata-index} <bib key>``: the table of that source's errata boxes."""

    required_arguments = 1
    has_content = False

    def run(self):
        key = self.arguments[0].strip()
        if key not in self.config.errata_sources:
            _warn(
                f"errata-index: unknown source {key!r} "
                f"(errata_sources: {', '.join(self.config.errata_sources)})",
                self.get_location(),
            )
        node = errata_index(errata_source=key)
        self.set_source_info(node)
        return [node]


# -- collecting, per document -------------------------------------------------------------


def _box_title(box: nodes.Element) -> nodes.title | None:
    return next((c for c in box.children if isinstance(c, nodes.title)), None)


def collect(app, doctree) -> None:
    """Record the document's boxes and indexes in the environment; check the markup."""
    env = app.env
    docname = env.docname
    records = []
    for meta in list(doctree.findall(erratum_meta)):
        box = meta.parent
        box.remove(meta)
        title = _box_title(box)
        title_text = title.astext() if title is not None else ""
        labels = [n for n in box["names"] if n.startswith(LABEL_PREFIX)]
        location = (docname, meta["line"])
        if len(labels) != 1:
            _warn(
                f"erratum box {title_text!r} needs exactly one ({LABEL_PREFIX}...)= label "
                f"in front of it, has {labels or 'none'}",
                location,
                "label",
            )
            continue
        where, summary = (c for c in meta.children)
        records.append(
            {
                "label": labels[0],
                "source": meta["errata_source"],
                "line": meta["line"],
                "title": [c.deepcopy() for c in title.children
                          if "erratum-teaser" not in getattr(c, "get", lambda *a: ())("classes", ())]
                if title is not None else [],
                "where": [c.deepcopy() for c in where.children],
                "summary": [c.deepcopy() for c in summary.children],
            }
        )
    # an errata label on anything else, or an errata box written as a plain admonition
    for name, explicit in doctree.nametypes.items():
        if not explicit or not name.startswith(LABEL_PREFIX):
            continue
        node = doctree.ids.get(doctree.nameids.get(name) or "")
        if node is not None and "erratum" not in node.get("classes", ()):
            _warn(
                f"label {name!r} is not in front of an erratum box (an {{admonition}} "
                "of class erratum)",
                (docname, node.line),
                "label",
            )
    for box in doctree.findall(nodes.admonition):
        title = _box_title(box)
        if "erratum" not in box["classes"] and title and ERRATA_TITLE.match(title.astext()):
            _warn(
                f"admonition {title.astext()!r} looks like an errata box: give it the "
                "class erratum and :source:, :where: and :summary:",
                (docname, box.line),
                "markup",
            )
    indexes = [(n["errata_source"], n.line) for n in doctree.findall(errata_index)]
    store_boxes = getattr(env, ENV_BOXES, None)
    if store_boxes is None:
        store_boxes = {}
        setattr(env, ENV_BOXES, store_boxes)
    store_indexes = getattr(env, ENV_INDEXES, None)
    if store_indexes is None:
        store_indexes = {}
        setattr(env, ENV_INDEXES, store_indexes)
    store_boxes.pop(docname, None)
    store_indexes.pop(docname, None)
    if records:
        store_boxes[docname] = records
    if indexes:
        store_indexes[docname] = indexes
        # the generated table has maths: make sure the page loads MathJax
        env.get_domain("math").data["has_equations"][docname] = True


def purge(app, env, docname) -> None:
    for attr in (ENV_BOXES, ENV_INDEXES):
        getattr(env, attr, {}).pop(docname, None)


def merge(app, env, docnames, other) -> None:
    for attr in (ENV_BOXES, ENV_INDEXES):
        mine = getattr(env, attr, None)
        if mine is None:
            mine = {}
            setattr(env, attr, mine)
        theirs = getattr(other, attr, {})
        for docname in docnames:
            if docname in theirs:
                mine[docname] = theirs[docname]


def outdated(app, env, added, changed, removed) -> list[str]:
    """The appendix shows other documents' boxes: rewrite it when any document changes."""
    if not (added or changed or removed):
        return []
    return [d for d in getattr(env, ENV_INDEXES, {}) if d not in changed]


def check_consistency(app, env) -> None:
    boxes = getattr(env, ENV_BOXES, {})
    indexes = getattr(env, ENV_INDEXES, {})
    indexed: dict[str, list[tuple[str, int]]] = {}
    for docname, entries in sorted(indexes.items()):
        for key, line in entries:
            indexed.setdefault(key, []).append((docname, line))
    with_boxes: dict[str, list[tuple[str, int]]] = {}
    for docname, records in sorted(boxes.items()):
        for r in records:
            if r["source"]:
                with_boxes.setdefault(r["source"], []).append((docname, r["line"]))
    for key, where in sorted(with_boxes.items()):
        if key in env.config.errata_sources and key not in indexed:
            _warn(
                f"{len(where)} erratum box(es) of {key!r} but no {{errata-index}} {key} "
                "in the appendix",
                where[0],
                "index",
            )
    for key, where in sorted(indexed.items()):
        if len(where) > 1:
            _warn(f"{{errata-index}} {key} appears {len(where)} times", where[1], "index")
        if key not in with_boxes:
            _warn(f"{{errata-index}} {key}: no erratum box has this source", where[0], "index")


# -- building the tables ------------------------------------------------------------------


def _doc_order(env) -> dict[str, int]:
    """Documents in reading order (the toctree from the root document)."""
    order: dict[str, int] = {}

    def walk(doc: str) -> None:
        if doc in order:
            return
        order[doc] = len(order)
        for child in env.toctree_includes.get(doc, ()):
            walk(child)

    walk(env.config.root_doc)
    return order


def _chapter_name(env, docname: str) -> str:
    number = env.toc_secnumbers.get(docname, {}).get("")
    if number:
        return "Chapter " + ".".join(map(str, number))
    title = env.titles.get(docname)
    return title.astext() if title is not None else docname


def _short_title(title: list[nodes.Node]) -> list[nodes.Node]:
    """The box's title without its "Errata:" / "Erratum 2:" prefix, capitalised."""
    title = [n.deepcopy() for n in title]
    if title and isinstance(title[0], nodes.Text):
        text = TITLE_PREFIX.sub("", str(title[0]), count=1)
        text = text[:1].upper() + text[1:]
        title[0] = nodes.Text(text)
    return title


def _row(*cells: list[nodes.Node]) -> nodes.row:
    row = nodes.row()
    for content in cells:
        entry = nodes.entry()
        entry.extend(content)
        row += entry
    return row


def _para(*children: nodes.Node, classes=()) -> nodes.paragraph:
    para = nodes.paragraph(classes=list(classes))
    para.extend(children)
    return para


class BuildErrataIndex(SphinxPostTransform):
    """Replace each ``errata_index`` by the table of its source's boxes."""

    default_priority = 5  # before ReferencesResolver (10): it resolves our {ref}s

    def run(self, **kwargs) -> None:
        placeholders = list(self.document.findall(errata_index))
        if not placeholders:
            return
        env = self.env
        fromdoc = env.docname
        order = _doc_order(env)
        std = env.get_domain("std")
        boxes = [
            (docname, r)
            for docname, records in getattr(env, ENV_BOXES, {}).items()
            for r in records
        ]
        boxes.sort(key=lambda b: (order.get(b[0], len(order)), b[0], b[1]["line"]))
        for placeholder in placeholders:
            key = placeholder["errata_source"]
            mine = [(d, r) for d, r in boxes if r["source"] == key]
            placeholder.replace_self(self._table(key, mine, fromdoc, std))

    def _table(self, key, boxes, fromdoc, std) -> nodes.Node:
        env = self.env
        builder = self.app.builder
        table = nodes.table(
            classes=["errata-index", "colwidths-auto", "errata-source-" + nodes.make_id(key)]
        )
        tgroup = nodes.tgroup(cols=3)
        table += tgroup
        for width in (25, 60, 15):
            tgroup += nodes.colspec(colwidth=width)
        thead = nodes.thead()
        tgroup += thead
        thead += _row(
            [_para(nodes.Text("where in the source"))],
            [_para(nodes.Text("the erratum and its correction"))],
            [_para(nodes.Text("shown in"))],
        )
        tbody = nodes.tbody()
        tgroup += tbody
        for docname, r in boxes:
            label = r["label"]
            target_doc, anchor = std.anonlabels.get(label, ("", ""))
            title = _short_title(r["title"])
            if target_doc:
                uri = builder.get_relative_uri(fromdoc, target_doc) + "#" + anchor
                title_node = nodes.reference("", "", *title, internal=True, refuri=uri)
            else:  # the {ref} below reports the missing label
                title_node = nodes.inline("", "", *title)
            ref = addnodes.pending_xref(
                "",
                nodes.inline("", _chapter_name(env, docname)),
                refdomain="std",
                reftype="ref",
                reftarget=label,
                refexplicit=True,
                refwarn=True,
                refdoc=fromdoc,
            )
            tbody += _row(
                [_para(*(n.deepcopy() for n in r["where"]))],
                [
                    _para(nodes.strong("", "", title_node), classes=["erratum-title"]),
                    _para(*(n.deepcopy() for n in r["summary"]), classes=["erratum-summary"]),
                ],
                [_para(ref)],
            )
        return table


# -- nodes never reach a writer; if one does, it writes nothing ---------------------------


def _skip(self, node):
    raise nodes.SkipNode


_VISITORS = {fmt: (_skip, None) for fmt in ("html", "latex", "text", "man", "texinfo")}


def _bib_keys(app) -> set[str]:
    keys: set[str] = set()
    for name in getattr(app.config, "bibtex_bibfiles", None) or ():
        path = Path(app.srcdir) / name
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            keys.update(re.findall(r"^\s*@\w+\s*\{\s*([^,\s]+)\s*,", text, re.M))
    return keys


def check_sources(app) -> None:
    keys = _bib_keys(app)
    if not keys:
        return
    for key in app.config.errata_sources:
        if key not in keys:
            _warn(f"errata_sources: {key!r} is not a key of bibtex_bibfiles", None, "config")


def setup(app):
    app.add_config_value("errata_sources", DEFAULT_SOURCES, "env", types=[dict])
    app.add_node(erratum_meta, **_VISITORS)
    app.add_node(errata_index, **_VISITORS)
    app.add_directive("erratum", Erratum)
    # the erratum boxes are admonitions of class erratum (which jupyterlab-myst also renders)
    app.add_directive("admonition", AdmonitionOrErratum, override=True)
    app.add_directive("errata-index", ErrataIndex)
    app.add_post_transform(BuildErrataIndex)
    app.connect("builder-inited", check_sources)
    app.connect("doctree-read", collect)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    app.connect("env-get-outdated", outdated)
    app.connect("env-check-consistency", check_consistency)
    return {
        "version": "1.0",
        "parallel_read_safe": True,
        "parallel_write_safe": True,
        "env_version": 1,
    }
