"""What renders for people: generated modules and tables (render, export), the engine page, the
matrix (reviewer, families), the semantic diff and the bump pull request (diff, impact,
readings_lost, pr_body), doc findings and markdown output."""
