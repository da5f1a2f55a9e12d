"""Helpers of the docs build for sphinx-gallery, imported by name from conf.py."""

from sphinx_gallery.scrapers import matplotlib_scraper


def tight_scraper(block, block_vars, gallery_conf, **kwargs):
    """The matplotlib scraper, saving with ``bbox_inches="tight"`` so that no label is cut off."""
    return matplotlib_scraper(block, block_vars, gallery_conf, bbox_inches="tight", **kwargs)
