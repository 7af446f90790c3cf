"""Is a figure the page shows really drawn? Read back its PNG and look at the pixels.

A matplotlib figure that went wrong on its way to the page (drawn while another thread
cleared it, shown before its artists were added) arrives as an image of the right size
that is one flat colour, or nearly so. Every figure of the course has at least 7 % of its
pixels off the background colour and hundreds of colours; an empty timeline (axes, ticks,
legend, title and no bars) has about 5 %; a blank one has none.
"""
from __future__ import annotations

import base64
import io

from PIL import Image

MIN_WIDTH, MIN_HEIGHT = 100, 50    # pixels
MIN_COLOURS = 16
MIN_INK = 0.03                     # share of pixels that differ from the background

# The images of a part of the page, as the bytes it shows: their data: URLs (how
# JupyterLab renders image/png outputs), or "" for an image served another way.
IMAGE_SOURCES_JS = """(root) => [...root.querySelectorAll('img')].map(
  (i) => (i.src || '').startsWith('data:image/png;base64,') ? i.src : '')"""


def png_bytes(src: str) -> bytes:
    return base64.b64decode(src.split(",", 1)[1])


def blank_reason(png: bytes) -> str | None:
    """Why this PNG is not a drawn figure (tiny, flat, nearly empty), or None if it is."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    width, height = image.size
    if width < MIN_WIDTH or height < MIN_HEIGHT:
        return f"tiny: {width}x{height} px"
    colours = image.getcolors(width * height)        # [(count, rgb)], every colour
    background = max(colours)[0]
    ink = 1 - background / (width * height)
    if len(colours) < MIN_COLOURS or ink < MIN_INK:
        return (f"blank: {width}x{height} px, {len(colours)} colour(s), "
                f"{ink:.1%} of the pixels off the background")
    return None


def image_problems(locator, what: str) -> list[str]:
    """Every image inside `locator` (a Playwright locator) that is not a drawn figure.
    An image that is not a PNG data: URL is checked from a screenshot of the element."""
    problems = []
    sources = locator.evaluate(IMAGE_SOURCES_JS)
    for k, src in enumerate(sources):
        try:
            png = png_bytes(src) if src else locator.locator("img").nth(k).screenshot()
            reason = blank_reason(png)
        except Exception as exc:  # noqa: BLE001 - unreadable is a problem to report too
            reason = f"unreadable ({exc})"
        if reason:
            problems.append(f"{what}, image {k + 1}: {reason}")
    return problems
