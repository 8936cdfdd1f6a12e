"""Sanitising for anything untrusted that reaches the browser: documents, constraints, responses, notes.

Untrusted text must never make the viewer's browser contact another host: HTML keeps structure only (no img, src,
srcset, background, style, CSS url()), and Markdown images become the plain text "[image: URL]" (never fetched).
"""

from __future__ import annotations

import html
import re

import nh3

ALLOWED_TAGS: set[str] = {
    "p", "br", "b", "strong", "i", "em", "u", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td",
    "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "code", "pre", "span", "div", "a", "sup", "sub", "hr",
}
ALLOWED_ATTRIBUTES: dict[str, set[str]] = {"a": {"href", "title"}, "td": {"colspan", "rowspan"}, "th": {"colspan", "rowspan"}}
_UNSAFE_SCHEME = re.compile(r"(?i)\b(java|vb)script\s*:|\bdata\s*:\s*text/html")
# ![alt](destination "title"): the destination raw, in <...>, or HTML-escaped as &lt;...&gt;
_MARKDOWN_IMAGE = re.compile(
    r"!\[(?:[^\[\]\\]|\\.|\[[^\[\]]*\])*\]\(\s*(?:<(?P<angle>[^>\n]*)>|&lt;(?P<escaped>.*?)&gt;|(?P<raw>(?:[^\s()]|\([^\s()]*\))*))"
    r"(?:\s+[^)\n]*)?\s*\)"
)
_HTML_IMAGE = re.compile(r"""(?is)<img\b[^>]*?\bsrc\s*=\s*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>[^\s>]+))[^>]*>""")
_MARKDOWN_ACTIVE = re.compile(r"([\\`*_\[\]()!|~$])")
# untrusted text renders under the page's #### section headings: its own headings start at h5 (h1) and h6 (h2-h6)
HEADING_FLOOR = 5
_HEADING_TAG = re.compile(r"<(/?)h([1-6])>")


def sanitize_html(markup: str) -> str:
    """Keep safe structural HTML; drop scripts, event handlers, styles, images and javascript: links."""
    return nh3.clean(
        markup,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


def demote_headings(markup: str) -> str:
    """Sanitised HTML with every heading moved below the page's section headings: h1 to h5, h2-h6 to h6."""
    return _HEADING_TAG.sub(lambda m: f"<{m[1]}h{min(HEADING_FLOOR + int(m[2]) - 1, 6)}>", markup)


def escape_text(text: str) -> str:
    """Escape plain text for inclusion in HTML (no markup survives)."""
    return html.escape(text, quote=True)


def _image_placeholder(url: str) -> str:
    return "[image: " + _MARKDOWN_ACTIVE.sub(r"\\\1", url.strip()) + "]"


def inert_images(markdown: str) -> str:
    """Markdown with every image made inert: `![alt](URL)` shows as the text "[image: URL]", and any other image
    syntax (reference images, nested ones) has its "![" escaped, so the browser never fetches it."""
    shown = _MARKDOWN_IMAGE.sub(lambda m: _image_placeholder(m["angle"] or m["escaped"] or m["raw"] or ""), markdown)
    return shown.replace("![", "!\\[")


def html_markdown(text: str) -> str:
    """Untrusted Markdown that may hold HTML, made inert for st.markdown(..., unsafe_allow_html=True): structural
    HTML only, headings demoted below the page's, <img> and Markdown images as "[image: URL]" text, script links
    blocked."""
    pictured = _HTML_IMAGE.sub(lambda m: escape_text(_image_placeholder(m["dq"] or m["sq"] or m["bare"] or "")), text or "")
    # images before sanitising (nh3 would take <URL> destinations for tags) and after (a stripped tag can join "!" and "[")
    return _UNSAFE_SCHEME.sub("blocked:", inert_images(demote_headings(sanitize_html(inert_images(pictured)))))


def plain_markdown(text: str) -> str:
    """Untrusted text for any Markdown-rendering call (st.markdown, captions, alerts, widget and expander labels):
    HTML escaped, images as "[image: URL]" text, script links blocked; other Markdown (bold, links) still renders."""
    return _UNSAFE_SCHEME.sub("blocked:", inert_images(escape_text(text or "")))


def highlighted_markdown(before: str, span: str, after: str, replaced: str = "") -> str:
    """Untrusted text made inert (plain_markdown) with `span` in <mark> and, when given, the text it replaced struck
    through in <del> after it: safe for st.markdown(..., unsafe_allow_html=True)."""
    struck = f" <del>{plain_markdown(replaced)}</del>" if replaced else ""
    return f"{plain_markdown(before)}<mark>{plain_markdown(span)}</mark>{struck}{plain_markdown(after)}"


def inline_code(text: str) -> str:
    """Untrusted text as a Markdown code span (shown literally): the fence is longer than any backtick run in it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text.replace(chr(10), ' ')}{pad}{fence}" if text else ""
