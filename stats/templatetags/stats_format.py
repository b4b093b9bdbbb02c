"""Number formats shared by the stats pages and the curators' admin pages: a missing value is a dash, never 0."""

from django import template

register = template.Library()

DASH = "–"


@register.filter
def percent(value, digits=1):
    return DASH if value is None else f"{value * 100:.{int(digits)}f} %"


@register.filter
def ms(value):
    return DASH if value is None else f"{value:.1f} ms"


@register.filter
def decimal(value, digits=1):
    return DASH if value is None else f"{value:.{int(digits)}f}"
