"""{% recognise incident as knowledge %}: the incident page asks the knowledge base without jobs importing it.
{{ text|markdown }}: Markdown rendered through nh3 (knowledge.markdown)."""
from django import template
from django.utils.safestring import mark_safe

from knowledge import markdown, services

register = template.Library()


@register.simple_tag
def recognise(incident):
    if incident is None or getattr(incident, "pk", None) is None:
        return None
    return services.recognise(incident)


@register.filter(name="markdown")
def markdown_filter(text):
    return mark_safe(markdown.render(text))  # noqa: S308 - nh3 sanitised it
