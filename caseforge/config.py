"""Kept for caseforge/llm only, which reads these two from here until it imports them from caseforge.settings
(their home); nothing else imports this module."""
from caseforge.settings import PROMPTS_DIR, load_settings as settings

__all__ = ["PROMPTS_DIR", "settings"]
