"""What each LLM step must return."""
from __future__ import annotations

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


class JudgeVerdict(BaseModel):
    analysis: text(400)
    comprehensiveness: int = Field(ge=1, le=5)
    conciseness: int = Field(ge=1, le=5)
    answer_fluency: int = Field(ge=1, le=5)
