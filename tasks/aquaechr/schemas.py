"""What each LLM step must return."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from caseforge.llm.reply_bounds import text

# Every string and list is bounded so that the longest reply fits in the step's max_tokens
# (caseforge.llm.reply_bounds): a looping model stops at the bound instead of cutting its JSON.
Question = text(300, min_chars=5)
MAX_CITED = 8      # paragraph or sentence numbers in one reply


class GeneratedQuestion(BaseModel):
    question: Question


class QuestionWithParagraphs(BaseModel):
    question: Question
    paragraphs: list[int] = Field(max_length=MAX_CITED)


class QuestionWithSentences(BaseModel):
    question: Question
    sentences: list[int] = Field(max_length=MAX_CITED)


class ExtractedAnswer(BaseModel):
    sentences: list[int] = Field(max_length=MAX_CITED)


# The scores as an enum, not an integer with bounds: llama.cpp's grammar enforces an enum, but writes any
# integer for minimum/maximum (SmolLM2 answered 6 and more).
Score = Literal[1, 2, 3, 4, 5]


class JudgeVerdict(BaseModel):
    analysis: text(400)
    comprehensiveness: Score
    conciseness: Score
    answer_fluency: Score
