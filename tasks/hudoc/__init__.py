"""HUDOC (ECHR judgments): metadata query pager, document fetch, paragraph parser."""
