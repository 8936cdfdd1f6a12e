"""The chat message every prompt is made of and every provider sends."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class ChatMessage(BaseModel):
    """One chat message."""

    role: Literal["system", "user", "assistant"]
    content: str
