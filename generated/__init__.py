"""Generated engine constraints. Do not edit by hand."""
