"""Export a run's results in FlashInfer-Bench's own formats."""
