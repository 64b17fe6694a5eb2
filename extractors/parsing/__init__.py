"""Shared parsing helpers: Python (libcst, tree-sitter), C++ (tree-sitter), markdown."""
