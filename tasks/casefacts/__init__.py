"""CaseFacts: colloquial legal claims checked against U.S. Supreme Court cases."""
