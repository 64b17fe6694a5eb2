"""The runner: the engine protocol (base), one extraction run (pipeline), facts on two cores
(fact_split), the fact cache (factcache) and the crash-safe writer of generated/ and pins/."""
