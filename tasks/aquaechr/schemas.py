"""What each LLM step must return."""
from __future__ import annotations

from pydantic import BaseModel, Field


class GeneratedQuestion(BaseModel):
    question: str = Field(min_length=5)


class QuestionWithParagraphs(BaseModel):
    question: str = Field(min_length=5)
    paragraphs: list[int]


class QuestionWithSentences(BaseModel):
    question: str = Field(min_length=5)
    sentences: list[int]


class ExtractedAnswer(BaseModel):
    sentences: list[int]


class JudgeVerdict(BaseModel):
    analysis: str
    comprehensiveness: int = Field(ge=1, le=5)
    conciseness: int = Field(ge=1, le=5)
    answer_fluency: int = Field(ge=1, le=5)
