"""Planning: the orchestration above the engines: the engine registry, the planner (request,
prediction, each engine's view, support), its serving step (per-GPU share and capacity) and the
impact of a constraint change on the planned figures."""
