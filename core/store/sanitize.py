"""HTML sanitising for anything that reaches the browser: documents, constraints, responses."""

from __future__ import annotations

import html

import nh3

ALLOWED_TAGS: set[str] = {
    "p", "br", "b", "strong", "i", "em", "u", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td",
    "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "code", "pre", "span", "div", "a", "sup", "sub", "hr",
}
ALLOWED_ATTRIBUTES: dict[str, set[str]] = {"a": {"href", "title"}, "td": {"colspan", "rowspan"}, "th": {"colspan", "rowspan"}}


def sanitize_html(markup: str) -> str:
    """Keep safe structural HTML; drop scripts, event handlers, styles and javascript: links."""
    return nh3.clean(
        markup,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


def escape_text(text: str) -> str:
    """Escape plain text for inclusion in HTML (no markup survives)."""
    return html.escape(text, quote=True)
