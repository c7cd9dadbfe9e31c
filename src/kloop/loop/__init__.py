"""The orchestrator: stages, rounds, gate, lineage, workspace, prompts, resume."""
