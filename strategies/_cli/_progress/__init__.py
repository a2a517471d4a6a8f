"""Showing runs as they happen: the display seam (`_display`), live or plain, the tracker."""
