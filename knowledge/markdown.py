"""Markdown for resolutions and runbooks: markdown-it renders (raw HTML off), nh3 sanitises.

Two layers on purpose: markdown-it with html=False escapes any HTML a person typed, and nh3 keeps
only a small list of tags and attributes and drops every link scheme but http(s) and mailto, so
neither `<script>`, `javascript:` links nor `<img onerror=...>` survive.
"""
from __future__ import annotations

import nh3
from markdown_it import MarkdownIt

ALLOWED_TAGS = {
    "p", "br", "hr", "s", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "code", "pre", "blockquote",
    "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"style"}, "td": {"style"}}
URL_SCHEMES = {"http", "https", "mailto"}

_renderer = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
_renderer.enable("strikethrough")


def render(text: str | None) -> str:
    """Safe HTML for a Markdown text (an empty string for an empty text)."""
    if not text or not text.strip():
        return ""
    html = _renderer.render(text)
    return nh3.clean(html, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, url_schemes=URL_SCHEMES,
                     link_rel="noopener noreferrer nofollow", strip_comments=True)
