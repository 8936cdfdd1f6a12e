"""Review: accounts and permissions, benchmark verification, gold labels and adjudication."""
