"""Legal domain: statutes and guidance of the fictional Republic of Vessaria."""

from _kit import C, D, cite_docs, conflict_both, gap_phrase, hedge, inst, no_emoji, use

DOM = "Legal"
P = {}


def _add(*docs):
    for d in docs:
        P[d["doc_id"]] = d


_add(
    D("lg-tenancy-22", "Residential Tenancy Act 2019, Articles 22-23 (security deposits)",
      "Official Gazette of the Republic of Vessaria, consolidated text as of 1 January 2023",
      """Article 22. (1) At the end of a residential tenancy the landlord shall return the security deposit to
      the tenant within 21 days of the tenant vacating the premises and returning the keys. (2) The deposit
      shall not exceed two months' rent. Article 23. (1) The landlord may deduct unpaid rent and the cost of
      repairing damage beyond fair wear and tear. (2) Every deduction shall be itemised in writing and sent
      to the tenant together with the balance. (3) A landlord who fails to comply with Article 22(1) or
      23(2) is liable to pay the tenant twice the amount wrongfully withheld."""),
    D("lg-tenancy-guide", "Tenants' guide: getting your deposit back",
      "Port Elvane Municipal Housing Office leaflet, revised March 2024",
      """When you move out, hand back all keys and ask the landlord to sign a check-out report. Under the
      Residential Tenancy Act 2019, Article 22, your landlord has 14 days from the day you leave to return
      your deposit. Any deductions have to be listed in writing. If the landlord keeps money without a valid
      reason, you can claim twice the amount withheld. Contact the Housing Office advice line for a template
      demand letter. This leaflet is general information and not legal advice."""),
    D("lg-commercial", "Commercial Leases Act 2015, Article 31 (guarantees)",
      "Official Gazette of the Republic of Vessaria, consolidated text as of 1 January 2023",
      """Article 31. (1) A commercial lease may require the tenant to provide a bank guarantee or cash
      guarantee of up to six months' rent. (2) The landlord shall release the guarantee within 60 days after
      the end of the lease, less any sums due under the lease. (3) The parties may agree a different period
      in writing. (4) This Article does not apply to residential tenancies, which are governed by the
      Residential Tenancy Act 2019."""),
    D("lg-civproc-fees", "Civil Procedure Rules, Schedule 2 (court fees)",
      "Vessarian Ministry of Justice, Civil Procedure Rules, Schedule 2, 2022",
      """| Claim value (VSC) | Filing fee (VSC) | Hearing fee (VSC) |
|---|---|---|
| up to 1,000 | 40 | none |
| 1,001 to 5,000 | 90 | 60 |
| 5,001 to 25,000 | 250 | 180 |
| over 25,000 | 1 percent of claim | 400 |

Claims up to 5,000 VSC are heard under the small claims track of the District Court. Fee remission is
available to applicants receiving income support. Fees are payable when the claim is filed.""",
      "markdown_table"),
    D("lg-admin-review", "Administrative Review Act 2016, Articles 8-9",
      "Official Gazette of the Republic of Vessaria, 2016",
      """Article 8. A person affected by a decision of a public authority may apply to the authority's review
      unit for internal review within 30 days of being notified of the decision. Article 9. (1) The review
      unit shall decide within 45 days. (2) An application for review does not suspend the decision unless
      the review unit orders otherwise. (3) This Act does not apply to disputes between private parties,
      including disputes between landlords and tenants or employers and employees."""),
    D("lg-esc-41", "Employment Standards Code, Article 41 (annual leave)",
      "Official Gazette of the Republic of Vessaria, Employment Standards Code, consolidated 2023",
      """Article 41. (1) An employee who has completed 12 months of continuous service is entitled to 22
      working days of paid annual leave per leave year. (2) During the first 12 months, leave accrues at
      1.8 working days per completed month. (3) Up to 5 days of untaken leave may be carried over into the
      next leave year and must be taken by 31 March of that year; leave not taken by that date lapses. (4)
      The employer shall give at least 14 days' notice if it requires the employee to take leave on specific
      dates."""),
    D("lg-esc-faq", "Ministry of Labour FAQ: annual leave",
      "Vessarian Ministry of Labour website, FAQ page, updated 2024",
      """Can I carry over leave I did not use? Yes. Under the Employment Standards Code, Article 41, you may
      carry over up to 10 days of unused annual leave into the next leave year. Carried-over days should be
      used by 31 March; after that they may be lost. How much leave do I get? Full-time employees with at
      least a year of service get 22 working days. Part-time employees receive a pro-rata amount. This FAQ
      is a plain-language summary; the Code is the binding text."""),
    D("lg-esc-40", "Employment Standards Code, Article 40 (parental leave)",
      "Official Gazette of the Republic of Vessaria, Employment Standards Code, consolidated 2023",
      """Article 40. (1) Each parent is entitled to 16 weeks of parental leave, to be taken before the child
      reaches the age of three. (2) Notice of at least four weeks shall be given to the employer. (3) Leave
      may be taken in up to three blocks. (4) Parental leave is unpaid by the employer; a benefit is payable
      by the Social Insurance Fund under its own rules. (5) Annual leave continues to accrue during parental
      leave."""),
    D("lg-esc-55", "Employment Standards Code, Article 55 (notice of termination)",
      "Official Gazette of the Republic of Vessaria, Employment Standards Code, consolidated 2023",
      """Article 55. (1) An employee who resigns shall give notice of at least one month, or two months after
      five years of service. (2) An employer who terminates employment shall give notice of one month per
      completed three years of service, with a minimum of one month and a maximum of six months. (3) Notice
      shall be given in writing and states the last day of employment. (4) During the notice period, the
      employee is entitled to reasonable paid time off to look for new work."""),
    D("lg-warranty", "Consumer Goods Warranty Act 2020, Articles 5-7",
      "Official Gazette of the Republic of Vessaria, 2020",
      """Article 5. The seller is liable for any lack of conformity of consumer goods that becomes apparent
      within 3 years of delivery; for household appliances with a retail price above 300 VSC the period is
      4 years. Article 6. A lack of conformity that becomes apparent within 12 months of delivery is presumed
      to have existed at delivery unless the seller proves otherwise. Article 7. The consumer may first
      require repair or replacement, free of charge, within a reasonable time; if this is impossible or fails,
      the consumer may claim a price reduction or terminate the contract."""),
    D("lg-warranty-blog", "Blog: what your extended warranty really covers",
      "Harlow & Dree Solicitors, client blog, 2023",
      """Retailers often sell extended warranties at the checkout. These are commercial insurance products and
      come on top of your statutory rights, which cannot be reduced by contract. Read the exclusions: many
      extended warranties exclude accidental damage, batteries and cosmetic defects. Before buying one,
      compare its price with the cost of a likely repair. If you bought with a credit card, your card issuer
      may offer additional purchase protection. Contact our consumer team for a fixed-fee review."""),
    D("lg-small-claims", "Small claims track: how it works",
      "Vessarian District Courts information sheet DC-3, 2023",
      """Claims up to 5,000 VSC are allocated to the small claims track. Hearings are informal, usually last
      under an hour, and parties normally represent themselves. Each side bears its own legal costs except
      the court fees, which the losing party may be ordered to pay. The judge may decide the case on the
      papers if both parties agree. Judgments are enforceable after 14 days. Mediation is offered free of
      charge before the hearing date is fixed."""),
)

SA = "statute_article"
LG_GAP = "Based on the materials provided, this question cannot be answered directly."
LAWYER = C("You are a legal researcher at a tenants' and workers' advice centre drafting an opinion.", "persona",
           "role",
           crit="Satisfied when the response reads as a careful legal research note (identifies the governing "
                "provision, precise and formal). Not satisfied if it is casual or gives unhedged personal advice.")


def statute_cite(n: int, example: str) -> dict:
    return C(f'Cite the statute name and article number for each legal point, e.g. "{example}"; cite at least '
             f"{n} distinct article(s).", "knowledge_protocol", "citation",
             rule="enterprise:citation_count", kw={"pattern": SA, "min_distinct": n})


INSTANCES = [
    inst("legal-noisy-01", DOM,
         "I moved out of my flat in Port Elvane five weeks ago and handed back the keys. The landlord still has "
         "my deposit and has not sent any list of deductions. What are my rights?",
         "noisy", "natural",
         [
             LAWYER,
             C("State the core conclusion first, then the supporting points.", "output", "ordering",
               crit="Satisfied when the opening sentence gives the conclusion (the landlord is out of time and "
                    "may owe twice the withheld amount). Not satisfied if the conclusion comes only at the end."),
             C("Use a numbered list with at least 3 points after the conclusion.", "output", "format",
               rule="enterprise:numbered_list", kw={"min_items": 3}),
             statute_cite(2, "Article 22 of the Residential Tenancy Act 2019"),
             C("Rely only on residential tenancy law; do not apply commercial lease or administrative review "
               "provisions.", "knowledge_protocol", "source_filtering",
               crit="Satisfied when the 60-day commercial guarantee rule and the Administrative Review Act are "
                    "not applied to this residential deposit (mentioning they do not apply is fine). Not "
                    "satisfied otherwise."),
             gap_phrase(LG_GAP),
             conflict_both("the return deadline"),
             hedge(["definitely", "must", "inevitably", "guaranteed"]),
             no_emoji(),
         ],
         [use(P, "lg-commercial", "noise"), use(P, "lg-admin-review", "noise"), use(P, "lg-esc-41", "noise"),
          use(P, "lg-warranty", "noise"), use(P, "lg-civproc-fees", "partial"), use(P, "lg-esc-55", "noise"),
          use(P, "lg-warranty-blog", "noise"), use(P, "lg-small-claims", "partial"),
          use(P, "lg-tenancy-22", "supporting"), use(P, "lg-esc-40", "noise")],
         notes="Art. 22(1): return within 21 days of vacating and returning keys - five weeks exceeds it; Art. 23(2): "
               "deductions must be itemised in writing; Art. 23(3): liable for twice the amount wrongfully "
               "withheld; optional: small claims track for claims up to 5,000 VSC."),
    inst("legal-noisy-02", DOM,
         "My washing machine (bought for 640 VSC, delivered 14 months ago) has stopped spinning. The shop says "
         "its one-year guarantee has expired. Can I still require a free repair, and who has to prove what?",
         "noisy", "natural",
         [
             C("Write for a consumer with no legal training.", "persona", "audience",
               crit="Satisfied when legal concepts (lack of conformity, burden of proof) are explained in plain "
                    "language. Not satisfied if the answer is written in dense legal jargon."),
             C("Keep the answer between 100 and 250 words.", "output", "content",
               rule="enterprise:word_count_range", kw={"min_words": 100, "max_words": 250}),
             statute_cite(2, "Article 5 of the Consumer Goods Warranty Act 2020"),
             C("Explain how the delivery date, price and the Act's time limits combine to reach the conclusion.",
               "knowledge_protocol", "evidence_chaining",
               crit="Satisfied when the answer links 640 VSC > 300 VSC -> 4-year period (Art. 5), 14 months > 12 "
                    "months -> the presumption of Art. 6 no longer applies so the consumer may need to show the "
                    "defect existed at delivery, and Art. 7 repair remedy. Not satisfied if it asserts a result "
                    "without linking these facts."),
             C("Do not recommend buying an extended warranty.", "output", "negative",
               crit="Satisfied when no recommendation to buy an extended warranty appears. Not satisfied if the "
                    "answer suggests purchasing one."),
             gap_phrase(LG_GAP),
             conflict_both("the warranty period"),
             no_emoji(),
         ],
         [use(P, "lg-warranty-blog", "noise"), use(P, "lg-small-claims", "noise"), use(P, "lg-tenancy-22", "noise"),
          use(P, "lg-warranty", "supporting"), use(P, "lg-commercial", "noise"), use(P, "lg-admin-review", "noise"),
          use(P, "lg-esc-41", "noise"), use(P, "lg-civproc-fees", "noise")],
         notes="Art. 5: 4 years for appliances above 300 VSC, so still within the period; the shop's own guarantee "
               "does not limit statutory rights; Art. 6 presumption only within 12 months, so after 14 months the "
               "consumer may have to show the defect existed at delivery; Art. 7: free repair or replacement first."),
    inst("legal-gap-01", DOM,
         "How long do I have to bring a court claim against my former landlord for an unreturned deposit "
         "before my claim becomes time-barred?",
         "gap", "augmented",
         [
             LAWYER,
             gap_phrase(LG_GAP, lead="If no provided document sets out the limitation period"),
             C("Do not treat the landlord's 21-day return deadline, the 30-day administrative review window or "
               "the 14-day enforcement delay as a limitation period.", "knowledge_protocol", "source_filtering",
               crit="Satisfied when none of these periods is presented as the time limit for suing. Not satisfied "
                    "if any of them is offered as the limitation period."),
             statute_cite(1, "Article 22 of the Residential Tenancy Act 2019"),
             conflict_both("any time limit"),
             C("Keep it under 150 words.", "output", "content",
               rule="length_constraints:number_words", kw={"num_words": 150, "relation": "less than"}),
             hedge(["definitely", "must", "inevitably"]),
         ],
         [use(P, "lg-tenancy-22", "partial"), use(P, "lg-admin-review", "noise"), use(P, "lg-small-claims", "partial"),
          use(P, "lg-civproc-fees", "noise"), use(P, "lg-commercial", "noise"), use(P, "lg-esc-55", "noise"),
          use(P, "lg-warranty", "noise")]),
    inst("legal-gap-02", DOM,
         "I am resigning with 9 days of annual leave left. Is my employer obliged to pay me for the untaken "
         "days in my final salary?",
         "gap", "augmented",
         [
             C("You are an employment-law adviser at a trade union help desk.", "persona", "role",
               crit="Satisfied when the tone is that of a union adviser speaking to a member: supportive but "
                    "precise. Not satisfied if it reads as the employer's HR department or as marketing."),
             gap_phrase(LG_GAP),
             C("Do not infer a payout rule from the carry-over or notice provisions.", "knowledge_protocol",
               "uncertainty",
               crit="Satisfied when the answer does not claim a right to (or exclusion from) payment in lieu based "
                    "on Articles 41 or 55. Describing what those articles do cover is acceptable. Not satisfied if "
                    "a payout rule is asserted."),
             C("Use markdown headings with at least 2 sections (e.g. what the documents cover, what is missing).",
               "output", "format", rule="enterprise:section_count", kw={"min_sections": 2}),
             statute_cite(1, "Employment Standards Code, Article 41"),
             conflict_both("leave entitlement"),
             no_emoji(),
         ],
         [use(P, "lg-esc-41", "partial"), use(P, "lg-esc-55", "partial"), use(P, "lg-esc-40", "noise"),
          use(P, "lg-admin-review", "noise"), use(P, "lg-small-claims", "noise"), use(P, "lg-warranty", "noise")]),
    inst("legal-conflict-01", DOM,
         "Within how many days must a landlord return a residential tenant's deposit, and what happens if the "
         "landlord is late?",
         "conflict", "augmented",
         [
             LAWYER,
             conflict_both("the number of days"),
             C("Do not decide which source is correct; you may note which one is the statute text.",
               "knowledge_protocol", "uncertainty",
               crit="Satisfied when the answer does not declare one deadline as the definitive answer beyond "
                    "noting the statutory text vs the leaflet's status. Not satisfied if it resolves the conflict "
                    "by fiat or invents an amendment."),
             statute_cite(2, "Article 23 of the Residential Tenancy Act 2019"),
             cite_docs(2, 'Also tag each value with its document reference, e.g. "[doc 4]", covering at least 2 '
                          "documents."),
             C("Use a bullet list with at least 3 items.", "output", "format",
               rule="enterprise:bullet_list", kw={"min_items": 3}),
             gap_phrase(LG_GAP),
             hedge(["definitely", "must", "inevitably", "guaranteed"],
                   text='Use measured language; avoid "definitely", "must", "inevitably" and "guaranteed".'),
         ],
         [use(P, "lg-commercial", "noise"),
          use(P, "lg-tenancy-guide", "conflicting", "g1",
              "Deposit return deadline: 21 days (Residential Tenancy Act 2019, Art. 22 consolidated text) vs 14 days (Municipal Housing Office leaflet, 2024)"),
          use(P, "lg-small-claims", "noise"), use(P, "lg-admin-review", "noise"),
          use(P, "lg-tenancy-22", "supporting", "g1",
              "Deposit return deadline: 21 days (Residential Tenancy Act 2019, Art. 22 consolidated text) vs 14 days (Municipal Housing Office leaflet, 2024)"),
          use(P, "lg-civproc-fees", "noise"), use(P, "lg-esc-41", "noise")],
         notes="Act Art. 22(1): 21 days; leaflet: 14 days (citing the same article). Both: itemised deductions and "
               "twice the wrongfully withheld amount (Art. 23(3))."),
    inst("legal-conflict-02", DOM,
         "How many days of unused annual leave can an employee carry over into the next leave year, and by "
         "when must they be used?",
         "conflict", "natural",
         [
             C("Write for HR officers drafting the company leave policy.", "persona", "audience",
               crit="Satisfied when the answer is framed for HR policy drafting (implications for the policy "
                    "text). Not satisfied if addressed to an individual employee's personal situation."),
             conflict_both("the carry-over cap"),
             C("Point out which source declares itself non-binding.", "knowledge_protocol", "source_filtering",
               crit="Satisfied when the response notes that the Ministry FAQ describes itself as a plain-language "
                    "summary and the Code as binding, while still reporting both figures. Not satisfied if this "
                    "is omitted or the FAQ figure is silently dropped."),
             statute_cite(1, "Employment Standards Code, Article 41"),
             cite_docs(2, 'Tag statements with document references like "[doc 2]", at least 2 distinct documents.'),
             C("Answer in 2 to 4 paragraphs.", "output", "format",
               rule="enterprise:paragraph_count_range", kw={"min_paragraphs": 2, "max_paragraphs": 4}),
             gap_phrase(LG_GAP),
             no_emoji(),
         ],
         [use(P, "lg-esc-40", "noise"), use(P, "lg-esc-55", "noise"),
          use(P, "lg-esc-faq", "conflicting", "g1",
              "Annual leave carry-over cap: 5 days (Employment Standards Code, Art. 41(3)) vs 10 days (Ministry of Labour FAQ, 2024)"),
          use(P, "lg-warranty", "noise"), use(P, "lg-admin-review", "noise"),
          use(P, "lg-esc-41", "supporting", "g1",
              "Annual leave carry-over cap: 5 days (Employment Standards Code, Art. 41(3)) vs 10 days (Ministry of Labour FAQ, 2024)"),
          use(P, "lg-small-claims", "noise")],
         notes="Code Art. 41(3): up to 5 days, use by 31 March, else lapses; FAQ: up to 10 days, by 31 March. FAQ "
               "states it is non-binding."),
]
