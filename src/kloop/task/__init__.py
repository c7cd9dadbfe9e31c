"""Tasks: the FlashInfer-Trace schema (Definition, Workload, Solution, Trace), loaders, inputs."""
