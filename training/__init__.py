"""Training: streaming datasets over curated shards, action-aware SFT and KL-regularized GRPO."""
