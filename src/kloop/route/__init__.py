"""Shape regimes, dispatcher generation and autotuning."""
