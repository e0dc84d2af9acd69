"""Collect: turn files, folders, archives and stdin into streams of lines with their context."""
