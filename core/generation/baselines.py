"""No-network baselines: a gap-identification refusal and an extractive answerer citing [doc N].

Chinese and Japanese questions are matched by content-character bigrams (core.language.cjk_terms), documents are split
at 。！？ too, and both baselines refuse in the question's language."""

from __future__ import annotations

import re

from core.language import CJK_SENTENCE_BREAK, cjk_language, cjk_terms
from core.protocols.prompting import QUESTION_MARKER

REFUSAL_TEXT = (
    "Based on the provided documents, I cannot directly answer your question: "
    "the knowledge base does not contain the information needed."
)
REFUSALS = {
    "en": REFUSAL_TEXT,
    "zh": "根据提供的文档，我无法直接回答您的问题：知识库中不包含所需的信息。",
    "ja": "提供された文書に基づいて、ご質問に直接お答えすることはできません。"
          "ナレッジベースには必要な情報が含まれていません。",
}
QUESTION_TAG = re.compile(r"<QUESTION>\s*(.*?)\s*</QUESTION>", re.DOTALL)
DOCUMENTS_TAG = re.compile(r"</?DOCUMENTS>")
DOC_HEADER = re.compile(r"^\[doc (\d+)\][^\n]*\n", re.MULTILINE)
SENTENCE_SPLIT = re.compile(rf"(?<=[.!?])\s+|(?:{CJK_SENTENCE_BREAK})\s*|\n+")
WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "by", "can", "could", "did", "do", "does", "for", "from", "had", "has", "have", "how", "i", "in", "is", "it", "its", "of", "on", "or", "our", "should", "that", "the", "their", "them", "there", "these", "this", "to", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will", "with", "would", "you", "your", "about", "into", "than", "then", "any", "all"]
)
MIN_OVERLAP = 0.34
MAX_SENTENCES = 3


def refusal_text(query: str) -> str:
    """The gap-identification refusal in the question's language (Chinese, Japanese, else English)."""
    return REFUSALS[cjk_language(query) or "en"]


def always_refuse(user_message: str) -> str:
    """The same gap-identification refusal for every prompt, in the question's language."""
    return refusal_text(split_prompt(user_message)[1])


def split_prompt(user_message: str) -> tuple[list[tuple[int, str]], str]:
    """([(doc number, body)], query) parsed from a prompt built by core.protocols.prompting.user_prompt (or with the
    query in <QUESTION> tags)."""
    tagged = QUESTION_TAG.search(user_message)  # a paper's own layout (e.g. LIT-RAGBench's released prompts)
    if tagged:
        head = DOCUMENTS_TAG.sub("", user_message[:tagged.start()])
        return split_prompt(f"{head}\n{QUESTION_MARKER} {tagged.group(1)}")
    head, _, query = user_message.rpartition(QUESTION_MARKER)
    if not _:
        head, query = "", user_message
    headers = list(DOC_HEADER.finditer(head))
    docs = []
    for index, match in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(head)
        docs.append((int(match.group(1)), head[match.end() : end].strip()))
    return docs, query.strip()


def content_words(text: str) -> set[str]:
    """Lower-cased words of `text` without stopwords or one-letter tokens, plus its Chinese / Japanese terms."""
    return {w for w in WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 1} | set(cjk_terms(text))


def score_sentences(docs: list[tuple[int, str]], query: str) -> list[tuple[float, int, str]]:
    """(overlap with the query's content words, doc number, sentence), best first."""
    wanted = content_words(query)
    if not wanted:
        return []
    scored = []
    for number, body in docs:
        for sentence in SENTENCE_SPLIT.split(body):
            sentence = sentence.strip()
            if len(sentence) < 3:
                continue
            overlap = len(wanted & content_words(sentence)) / len(wanted)
            scored.append((overlap, number, sentence))
    return sorted(scored, key=lambda item: (-item[0], item[1]))


def extractive(user_message: str, *, min_overlap: float = MIN_OVERLAP, max_sentences: int = MAX_SENTENCES) -> str:
    """The best-matching document sentences with [doc N] citations, or the refusal (in the question's language) when
    nothing matches well."""
    docs, query = split_prompt(user_message)
    picked = [s for s in score_sentences(docs, query) if s[0] >= min_overlap][:max_sentences]
    if not picked:
        return refusal_text(query)
    return "\n".join(f"- {sentence} [doc {number}]" for _, number, sentence in picked)


BASELINES = {"baseline:always-refuse": always_refuse, "baseline:extractive": extractive}
