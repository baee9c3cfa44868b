"""From a model name to an answer: which deployments serve it, which one to try next, and the
attempts, retries, fallbacks and deadlines around each upstream call."""
