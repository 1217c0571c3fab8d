"""Kept for caseforge/llm only, which reads the settings file through these two until it reads caseforge.settings
(their home: file_tables and table); nothing else imports this module."""
from caseforge.settings import file_tables as load, table as section

__all__ = ["load", "section"]
