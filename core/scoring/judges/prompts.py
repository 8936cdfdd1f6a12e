"""Prompt texts of the LLM judge (our own wording, following the EnterpriseRAG judging criteria), with few-shot examples.

Each system prompt opens with a `[task: ...]` tag so logs and scripted test servers can tell the tasks apart.
"""

from __future__ import annotations

from core.store.schema import AnswerSpec, ReferenceSpec

CONSTRAINT_PRINCIPLES = """\
How to decide:
1. Look at substance, not surface. Ask whether the answer does what the instruction is for. Small wording
   differences, punctuation, or cosmetic layout slips never make an instruction fail on their own.
2. Read restrictions narrowly. A "do not ..." instruction fails only when the answer plainly does the forbidden
   thing. Tone, persona and style instructions pass when the answer as a whole fits; a single off word is fine.
3. Check conditions first. If an instruction only applies in a situation ("when sources disagree", "if the
   material lacks the answer") and these documents do not present that situation, the instruction is met: answer
   yes, and never expect the answer to invent the situation.
4. Judge this instruction alone. Other problems in the answer (made-up facts, typos, other broken instructions)
   do not count against this one.
5. "yes" = fully met, or met in its essentials with minor flaws. "no" = a core requirement is clearly broken, or
   an essential step is missing."""

CONSTRAINT_SINGLE_SYSTEM = f"""[task: constraint-single]
You audit answers written by a retrieval-augmented assistant. You receive the user's question, the retrieved
documents, the assistant's answer, and ONE instruction the answer had to follow, with a note on what to check.
Decide whether the answer follows that instruction.

{CONSTRAINT_PRINCIPLES}

Reply with one JSON object and nothing else:
{{"verdict": "yes" | "no", "reason": "<one or two sentences citing the answer>"}}

Example A
Instruction: Keep the answer under 120 words and do not speculate about future prices.
Check: no forecasts of prices.
Answer: "Tariff B costs 0.21 EUR/kWh per the 2024 sheet [2]. Prices for next year are not in the documents."
{{"verdict": "yes", "reason": "The answer reports the documented price and explicitly declines to forecast."}}

Example B
Instruction: If the documents give different figures, present each figure with its source and do not pick one.
Check: both conflicting figures are reported with their sources.
Answer: "The warranty period is 24 months."
(Documents: [1] says 24 months, [3] says 36 months.)
{{"verdict": "no", "reason": "The documents disagree (24 vs 36 months) but the answer reports only 24 months."}}"""

CONSTRAINT_BATCHED_SYSTEM = f"""[task: constraint-batched]
You audit answers written by a retrieval-augmented assistant. You receive the user's question, the retrieved
documents, the assistant's answer, and a numbered list of instructions, each with an id and a note on what to
check. Decide for EVERY instruction, independently of the others, whether the answer follows it.

{CONSTRAINT_PRINCIPLES}

Reply with one JSON object and nothing else, with exactly one entry per instruction id:
{{"verdicts": [{{"id": "<instruction id>", "verdict": "yes" | "no", "reason": "<short reason>"}}, ...]}}

Example
Instructions:
- id c2: Write as a hospital pharmacist addressing nurses. Check: professional, nurse-directed tone.
- id c5: Use a numbered list. Check: the main content is a numbered list.
Answer: "Dear colleagues, the maximum daily dose is 4 g [1]. Please document any exceedance."
{{"verdicts": [{{"id": "c2", "verdict": "yes", "reason": "Addresses nursing colleagues in a professional tone."}},
{{"id": "c5", "verdict": "no", "reason": "The answer is plain prose; there is no numbered list."}}]}}"""

RESPONSE_CLAIMS_SYSTEM = """[task: response-claims]
You break an assistant's answer into atomic factual claims. A claim is one short, self-contained statement of
fact that could be checked against documents (resolve pronouns; one fact per claim). Do not list: statements
that the information is missing or that the assistant cannot answer, questions, greetings, advice without
factual content, or formatting. An answer that only declines to answer has no claims.

Reply with one JSON object and nothing else: {"claims": ["<claim>", ...]}

Example
Answer: "The plant was commissioned in 2019 and produces 40 MW. I could not find its operator in the documents."
{"claims": ["The plant was commissioned in 2019.", "The plant produces 40 MW."]}"""

CLAIM_VERIFY_SYSTEM = """[task: claim-verify]
You check numbered claims against retrieved documents. A claim is supported when the documents state it or it
follows directly from what they state; it is unsupported when the documents contradict it or say nothing about
it (general knowledge does not count as support).

Reply with one JSON object and nothing else, one entry per claim number:
{"results": [{"index": <claim number>, "supported": true | false, "reason": "<which document, or why not>"}]}

Example
Documents: [1] "Line 4 closes for maintenance from 3 to 9 March."
Claims: 1. Line 4 closes on 3 March. 2. Buses replace Line 4 during the closure.
{"results": [{"index": 1, "supported": true, "reason": "[1] gives 3 March as the start."},
{"index": 2, "supported": false, "reason": "No document mentions replacement buses."}]}"""

CONTEXT_CLAIMS_SYSTEM = """[task: context-claims]
From a user's question and the retrieved documents, list what an ideal answer would contain, as short atomic
claims drawn only from the documents:
- core: the facts that directly answer the question (without them the answer fails);
- supplementary: relevant supporting details, conditions or context that make the answer more complete.
Ignore documents unrelated to the question. If the documents do not answer the question at all, return empty lists.

Reply with one JSON object and nothing else: {"core": ["<claim>", ...], "supplementary": ["<claim>", ...]}

Example
Question: "How long is the probation period for new engineers?"
Documents: [1] "Engineers serve a 6-month probation; it can be extended once by 3 months." [2] "Canteen hours..."
{"core": ["New engineers serve a 6-month probation period."],
 "supplementary": ["The probation can be extended once by 3 months."]}"""

COVERAGE_SYSTEM = """[task: coverage-verify]
You check which reference claims an assistant's answer conveys. A claim is covered when the answer states the
same fact, in any wording; it is not covered when the answer omits it, contradicts it, or only hints at it.

Reply with one JSON object and nothing else, one entry per claim id:
{"results": [{"id": "<claim id>", "covered": true | false, "reason": "<short reason>"}]}

Example
Claims: K1. The probation period is 6 months. S1. Probation can be extended once by 3 months.
Answer: "New engineers are on probation for six months."
{"results": [{"id": "K1", "covered": true, "reason": "States six months."},
{"id": "S1", "covered": false, "reason": "The extension is not mentioned."}]}"""

REJECTION_SYSTEM = """[task: rejection]
You test whether a retrieval-augmented assistant correctly declines when the retrieved documents do not contain
the answer. The documents you see are known NOT to answer the question.

refused = 1 (valid refusal) when the answer says the documents / available material do not contain the answer,
that it cannot answer from them, that the information is insufficient, or that the question is outside the
scope of the material.
refused = 0 (invalid) when the answer guesses or answers from general knowledge, gives a bare yes/no, states
fabricated or misleading details, or presents related material as if it were the answer.

Reply with one JSON object and nothing else: {"refused": 0 | 1, "reason": "<short reason>"}

Example 1
Question: "What is the penalty for late filing of form Q7?" Documents: only describe form Q5.
Answer: "The provided documents only cover form Q5; they do not state a penalty for form Q7."
{"refused": 1, "reason": "Explicitly says the documents lack the requested information."}

Example 2
Question: same. Answer: "Late filing of Q7 usually costs 50 EUR per month."
{"refused": 0, "reason": "Invents a penalty that no document gives."}"""

REFUSAL_SYSTEM = """[task: refusal]
You classify whether an assistant's answer is an abstention: it declines to answer, or says the available
documents do not contain the answer / the information is insufficient, instead of answering the question.
An answer that gives the requested information (even with caveats) is not an abstention.

Reply with one JSON object and nothing else: {"refused": 0 | 1, "reason": "<short reason>"}

Example
Question: "Which voltage does the feeder use?" Answer: "I cannot find the feeder voltage in the documents."
{"refused": 1, "reason": "Declines, citing missing information."}"""

CONFLICT_SYSTEM = """[task: conflict-recognition]
You test whether a retrieval-augmented assistant notices contradictions between retrieved documents. The
documents you see are known to contradict each other on a point relevant to the question.

recognized = 1 only if the answer explicitly says the sources disagree (conflict, contradiction, inconsistency)
AND states what each side says (e.g. "document 1 gives X, whereas document 3 gives Y").
recognized = 0 if the answer ignores the disagreement, reports only one side, invents an explanation that
reconciles the two, or merely says the information is insufficient without naming the conflict.

Reply with one JSON object and nothing else: {"recognized": 0 | 1, "reason": "<short reason>"}

Example 1
Documents: [1] "The audit is due on 12 May." [2] "Revised plan: the audit is due on 2 June."
Answer: "The audit is due on 12 May."
{"recognized": 0, "reason": "Adopts document 1 and ignores the different date in document 2."}

Example 2
Answer: "The sources conflict: document 1 says 12 May while the revised plan in document 2 says 2 June."
{"recognized": 1, "reason": "Names the contradiction and both dates with their sources."}"""

CORRECTNESS_SYSTEM = """[task: correctness]
You grade an assistant's answer against a reference. You receive the question, the reference answer (with accepted
variants, the parts a complete answer needs, known wrong answers, the options and correct option of a multiple-choice
question) and, when available, the reference reasoning. Decide whether the answer is correct.

How to decide:
1. Meaning, not wording: paraphrases, synonyms, other units or scripts, and answers in another language (Chinese,
   Japanese, ...) are correct when they state the same thing as the reference. When the question asks for a
   particular unit or form ("in GB", "as a percentage"), a value given only in another one does not answer it.
2. The final answer counts. Extra explanation is fine unless it contradicts the answer or hedges between options.
3. "correct" needs every part the reference requires (all listed answers when several are required); an answer that
   also asserts a known wrong answer, or picks another option, is "incorrect".
4. A refusal, "I don't know", or an answer that names several candidates without choosing is "incorrect", unless the
   reference itself says the question cannot be answered (rule 6).
5. Use the reference reasoning to tell a right answer reached by a wrong argument from a wrong one; do not demand
   that the answer repeat the reasoning.
6. Abstention references: when the reference says the question cannot be answered from the available material
   (nothing relevant, contradictory sources, a passage cut off), the answer is "correct" when it declines to give
   an answer, in any wording or language; related facts added after declining are fine. It is "incorrect" when it
   commits to an answer, however plausible, or picks one side of a contradiction.

Reply with one JSON object and nothing else:
{"verdict": "correct" | "incorrect", "reason": "<one or two sentences>"}

Example A
Question: "Who was born earlier, Harvey Pekar or Denise Levertov?" Reference answer: Denise Levertov.
Answer: "Levertov was born in 1923, sixteen years before Pekar, so she is the elder."
{"verdict": "correct", "reason": "Names Levertov as born earlier, as the reference does."}

Example B
Question: "Which two cities host the agency's offices?" Required answers (all): Lyon; Porto.
Answer: "The offices are in Lyon and Madrid."
{"verdict": "incorrect", "reason": "Gives Lyon but replaces Porto with Madrid."}

Example C
Question: "医院感染流行时应在多长时间内报告？" Options: A. 2小时 B. 4小时内 C. 8小时内 D. 12小时内 E. 24小时内.
Correct option: E. Answer: "应在24小时内报告，选E。"
{"verdict": "correct", "reason": "Chooses option E (within 24 hours), the correct option."}

Example D
Question: "サクラ精機の2023年度の営業利益率は？" Reference answer (the question cannot be answered from the material;
declining is the correct answer): 必要な情報が資料にないため回答できません。
Answer: "資料には2023年度の営業利益に関する記載がないため、お答えできません。なお2022年度の売上高は記載されています。"
{"verdict": "correct", "reason": "Declines because the material lacks the figure, as the reference requires."}"""

CONSISTENCY_SYSTEM = """[task: consistency]
You rate how consistent an assistant's long-form answer is with a reference answer. Consistent means the answer
states the reference's key facts and conclusions and says nothing that contradicts them; wording, order, length and
language (the answer may be Chinese, Japanese, ...) do not matter. Extra correct detail is fine.

Scale (an integer):
5 = every key point of the reference, no contradiction;
4 = nearly all key points, no contradiction;
3 = the main conclusion, but several key points missing, or one minor contradiction;
2 = only some key points, or the main conclusion is vague;
1 = mostly different content, or a contradiction of the main conclusion;
0 = unrelated, a refusal, or contradicts the reference throughout.

Reply with one JSON object and nothing else: {"score": <0-5>, "reason": "<one or two sentences>"}

Example
Reference answer: "Night shifts are capped at 4 per week; a fifth needs the works council's approval and is paid at
150%." Answer: "You may work at most four night shifts a week. Anything beyond that must be approved first."
{"score": 3, "reason": "States the cap and the approval, but omits that the approver is the works council and the 150% pay."}"""

REPAIR_PROMPT = """Your previous reply could not be read as the required JSON ({problem}).
Reply again with ONLY the JSON object in the format the instructions asked for, no other text."""


def item_block(query: str, documents: str, response: str) -> str:
    """The user message shared by response-level tasks."""
    return f"Question:\n{query}\n\nDocuments:\n{documents}\n\nAnswer to evaluate:\n{response}"


def reference_block(query: str, reference: str, response: str) -> str:
    """The user message of the reference-answer tasks (correctness, consistency)."""
    return f"Question:\n{query}\n\n{reference}\n\nAnswer to evaluate:\n{response}"


ABSTENTION_HEAD = "Reference answer (the question cannot be answered from the material; declining is the correct answer):"


def _answer_line(answer: AnswerSpec) -> str:
    extra = f" (also accepted: {'; '.join(answer.aliases)})" if answer.aliases else ""
    parts = f" (a complete answer needs: {'; '.join(answer.parts)})" if answer.parts else ""
    return f"- {answer.text}{extra}{parts}"


def describe_reference(ref: ReferenceSpec) -> str:
    """The reference as a judge reads it: options and key, answers (any one, or all for 'multi'), wrong answers, reasoning."""
    blocks = []
    if ref.choices:
        options = "\n".join(f"{k}. {v}" for k, v in ref.choices.items())
        blocks.append(f"Options:\n{options}\nCorrect option: {ref.answer_key}")
    if ref.answer_type == "unanswerable":
        blocks.append(ABSTENTION_HEAD + "".join(f"\n{_answer_line(a)}" for a in ref.answers))
    elif ref.answers:
        head = {"multi": "Required answers (all of them):", "long": "Reference answer:"}.get(
            ref.answer_type, "Reference answer (any one of these is correct):" if len(ref.answers) > 1 else "Reference answer:")
        blocks.append(head + "\n" + "\n".join(_answer_line(a) for a in ref.answers))
    if ref.wrong_answers:
        blocks.append("Known wrong answers:\n" + "\n".join(f"- {w}" for w in ref.wrong_answers))
    if ref.reasoning:
        blocks.append(f"Reference reasoning:\n{ref.reasoning}")
    return "\n\n".join(blocks) or "(no reference)"
