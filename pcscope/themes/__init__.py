"""pcscope's Textual themes and the stylesheet that uses them.

Every colour the stylesheet (``pcscope.tcss``) uses is a ``$variable``: Textual's own
(``$primary``, ``$surface`` …) or the ``pcscope-*`` ones each theme defines below, so a
theme switch recolours everything and no widget hard-codes a colour. The colours are
chosen to stay distinct when Textual reduces them to 256 or 16 colours.
"""

from __future__ import annotations

from textual.theme import Theme

from pcscope.core.bundled import bundled_path

STYLESHEET = bundled_path("pcscope.themes", "pcscope.tcss")


def _variables(
    heat: str, badge: str, alp: str, link: str, muted: str, cursor_fg: str, cursor_bg: str
) -> dict[str, str]:
    return {
        "pcscope-heat": heat,
        "pcscope-badge": badge,
        "pcscope-alp": alp,
        "pcscope-link": link,
        "pcscope-muted": muted,
        "pcscope-cursor-foreground": cursor_fg,
        "pcscope-cursor-background": cursor_bg,
    }


DARK = Theme(
    name="pcscope-dark",
    primary="#5fafff",
    secondary="#5f87af",
    accent="#ffaf5f",
    warning="#ffd75f",
    error="#ff5f5f",
    success="#5fd787",
    foreground="#d0d0d0",
    background="#1c1c1c",
    surface="#262626",
    panel="#303030",
    dark=True,
    variables=_variables(
        heat="#ff8700", badge="#d787ff", alp="#5fd7d7", link="#87afff", muted="#8a8a8a",
        cursor_fg="#ffffff", cursor_bg="#005f87",
    ),
)

LIGHT = Theme(
    name="pcscope-light",
    primary="#005f87",
    secondary="#5f87af",
    accent="#af5f00",
    warning="#875f00",
    error="#af0000",
    success="#005f00",
    foreground="#1c1c1c",
    background="#eeeeee",
    surface="#e4e4e4",
    panel="#d0d0d0",
    dark=False,
    variables=_variables(
        heat="#d75f00", badge="#870087", alp="#005f5f", link="#0000af", muted="#585858",
        cursor_fg="#000000", cursor_bg="#afd7ff",
    ),
)

HIGH_CONTRAST = Theme(
    name="pcscope-high-contrast",
    primary="#ffff00",
    secondary="#00ffff",
    accent="#ffff00",
    warning="#ffff00",
    error="#ff0000",
    success="#00ff00",
    foreground="#ffffff",
    background="#000000",
    surface="#000000",
    panel="#000000",
    boost="#000000",
    dark=True,
    luminosity_spread=0.0,
    text_alpha=1.0,
    variables=_variables(
        heat="#ffff00", badge="#ff00ff", alp="#00ffff", link="#00ffff", muted="#ffffff",
        cursor_fg="#000000", cursor_bg="#ffff00",
    ),
)

THEMES: dict[str, Theme] = {t.name: t for t in (DARK, LIGHT, HIGH_CONTRAST)}
DEFAULT_THEME = DARK.name


def next_theme(current: str) -> str:
    """The theme after ``current`` in the cycle (``t``); an unknown name restarts it."""
    names = list(THEMES)
    if current not in THEMES:
        return names[0]
    return names[(names.index(current) + 1) % len(names)]
