"""Spend: prices, the cost of an answer, budgets (CONTRACT.md, "Spend: prices, cost, budgets")."""
