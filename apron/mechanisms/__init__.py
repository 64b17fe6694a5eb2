"""Memory mechanisms: one module each (NAME, TITLE and a `compute(model, heads, request)` that
returns a MechanismResult); `select` picks one for a config, `layer_specs` lists its layers and
`per_gpu` splits its figures over --tp and fits them in --gpu-memory by an engine's serving rules."""
