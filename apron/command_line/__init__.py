"""The `apron` command line, the top of the calculator: `cli` parses the arguments and prints
or writes each plan, `plot` draws its figures; `apron` (pyproject's scripts) runs cli.main."""
