"""The network side of an upstream call: pooled clients per provider, and the relay that commits
late and always closes the upstream."""
