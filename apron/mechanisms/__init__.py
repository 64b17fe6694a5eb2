"""Memory mechanisms: one module each (NAME, TITLE and a `compute(model, heads, request)`
that returns a MechanismResult); apron.select picks one for a config."""
