"""Financial domain: Orrinford Capital and Kestrel Asset Management funds (fictional)."""

from _kit import C, D, cite_docs, conflict_both, gap_phrase, hedge, inst, no_emoji, use

DOM = "Financial"
P = {}


def _add(*docs):
    for d in docs:
        P[d["doc_id"]] = d


_add(
    D("fi-ogi-fees", "Orrinford Global Infrastructure Income Fund: charges",
      "Orrinford Capital, Prospectus of the Orrinford Global Infrastructure Income Fund, section 9, April 2024",
      """The Fund offers Class A (retail) and Class I (institutional) shares. No entry charge is levied on either
      class. The ongoing charges figure (OCF) is 0.85 percent per year for Class A and 0.60 percent for Class I,
      deducted daily from the net asset value. A redemption fee of 1.00 percent is charged on shares redeemed
      within 90 days of purchase and is paid into the Fund for the benefit of remaining investors. The minimum
      initial investment is EUR 1,000 for Class A and EUR 500,000 for Class I. No performance fee is charged."""),
    D("fi-ogi-factsheet", "OGIIF monthly factsheet, September 2024",
      "Orrinford Capital factsheet, Class A accumulation, data as at 30 September 2024",
      """Fund size: EUR 412 million. Number of holdings: 46. Top sectors: regulated utilities 34 percent, toll
      roads 21 percent, telecom towers 17 percent. Distribution yield (Class A): 3.9 percent. Ongoing charges
      (Class A): 0.95 percent. Entry charge: none. Risk indicator: 4 on a scale of 1 to 7. Past performance
      does not predict future returns. Please read the prospectus and key information document before
      investing."""),
    D("fi-ogi-perf", "OGIIF calendar-year performance (Class A, EUR, net of fees)",
      "Orrinford Capital annual report 2023, performance appendix",
      """| Year | Fund return | Benchmark return | Difference |
|---|---|---|---|
| 2021 | 9.4% | 8.1% | +1.3 |
| 2022 | -3.2% | -5.6% | +2.4 |
| 2023 | 6.1% | 7.0% | -0.9 |

Benchmark: Ashby Global Core Infrastructure Index (net total return, EUR). Performance is calculated on a
NAV-to-NAV basis with income reinvested. The Fund was launched on 4 January 2021. Past performance is not
a reliable indicator of future results.""", "markdown_table"),
    D("fi-oge-fees", "Orrinford Global Equity Fund: charges",
      "Orrinford Capital, Prospectus of the Orrinford Global Equity Fund, section 8, April 2024",
      """Class A shares carry an entry charge of up to 3.00 percent and an ongoing charges figure of 1.45 percent
      per year; Class I shares have no entry charge and an OCF of 0.90 percent. A performance fee of 10 percent
      of outperformance against the Ashby World Index is payable, subject to a high-water mark. There
      is no redemption fee. Minimum initial investment: EUR 500 for Class A, EUR 250,000 for Class I."""),
    D("fi-kestrel-dist", "Kestrel Short Duration Bond Fund: distribution policy",
      "Kestrel Asset Management, Prospectus of the Kestrel Short Duration Bond Fund, section 6, 2023",
      """The Fund distributes net income quarterly for distribution share classes. Ex-distribution dates are
      the first business day of February, May, August and November, and payment is made to shareholders on
      the register within 20 business days after each ex-date. Accumulation share classes do not distribute;
      income is retained in the share price. Shareholders may elect to reinvest distributions without charge.
      Distributions may vary and are not guaranteed."""),
    D("fi-kestrel-web", "Kestrel Short Duration Bond Fund: fund page",
      "kestrel-am.example/funds/short-duration-bond, page retrieved October 2024",
      """<h1>Kestrel Short Duration Bond Fund</h1>
<p>A portfolio of investment-grade bonds with an average duration below two years, aiming to preserve
capital and deliver steady income.</p>
<table>
<tr><th>Share class</th><th>Distribution frequency</th><th>Yield</th></tr>
<tr><td>Dist EUR</td><td>Monthly</td><td>3.4%</td></tr>
<tr><td>Acc EUR</td><td>None (accumulating)</td><td>n/a</td></tr>
</table>
<p>Distributions are paid to your account; you can choose to reinvest them at no cost. Yields are
indicative, based on the last twelve months, and may change. The fund is available through most Vessarian
investment platforms.</p>
<button onclick="openDocs('kid')">Download documents</button>""", "html"),
    D("fi-kestrel-long", "Kestrel Long Duration Bond Fund: key facts",
      "Kestrel Asset Management key information summary, 2024",
      """The Kestrel Long Duration Bond Fund invests in government and supranational bonds with a portfolio
      duration between 12 and 18 years. Distribution classes pay income semi-annually, in March and September.
      Ongoing charges are 0.40 percent. The fund may use interest-rate futures for hedging, and leverage through
      derivatives is limited to 50 percent of net assets. The risk indicator is 5 of 7."""),
    D("fi-esg", "Orrinford Capital responsible investment policy",
      "Orrinford Capital policy document RI-01, 2024",
      """Orrinford excludes issuers deriving more than 10 percent of revenue from thermal coal extraction and
      any involvement in controversial weapons. Portfolio managers engage with the 20 largest holdings in each
      fund on climate transition plans each year. Voting decisions are published quarterly. Funds classified
      under the Vessarian Sustainable Products Rule disclose principal adverse impacts annually. The policy is
      reviewed by the Stewardship Committee every two years."""),
    D("fi-staff-dealing", "Personal account dealing rules for staff",
      "Orrinford Capital Compliance Manual, chapter 4, 2023",
      """Employees must obtain pre-clearance from Compliance before dealing in any listed security and hold
      the position for at least 30 days. Dealing in securities on the restricted list is prohibited. Units in
      Orrinford funds may be bought without pre-clearance but must be held for 60 days. Breaches are reported
      to the Head of Compliance and may lead to disciplinary action. Annual holdings declarations are due by
      31 January."""),
    D("fi-commentary", "Market commentary: infrastructure in a higher-rate world",
      "Orrinford Capital investment outlook, Q3 2024",
      """Listed infrastructure lagged broader equities in the first half as bond yields rose, but regulated
      utilities with inflation-linked revenues held up well. Our team sees opportunities in telecom towers,
      where valuations have fallen, and remains cautious on airports. We expect dividend growth of 4 to 6
      percent across the portfolio over the next year. This commentary reflects the views of the portfolio
      managers and is not investment advice."""),
    D("fi-tax-note", "Tax treatment of fund distributions for Vessarian residents",
      "Orrinford Capital investor guide, 2024",
      """For investors resident in the Republic of Vessaria, fund distributions are taxed as investment income
      at the flat rate of 22 percent, withheld at source by the paying agent. Accumulation share classes are
      taxed on a deemed-distribution basis each year. Gains on redemption are taxed at 15 percent. Investors in
      other countries should consult a tax adviser. This guide does not constitute tax advice."""),
    D("fi-dilution", "Orrinford funds: pricing and dealing",
      "Orrinford Capital, Prospectus, general section 5, April 2024",
      """Orrinford funds are valued at 12:00 Luxembourg time on each business day. Orders received before the
      11:00 cut-off are dealt at that day's price. Shares are issued and redeemed at a single price. To protect
      existing investors, the Manager may apply a dilution adjustment to the price of the Orrinford Global
      Equity Fund on days of large net flows; the adjustment factor for that fund is published in its
      supplement. Settlement is on the third business day after the dealing day."""),
)

ADVISOR = C("You are a client-service adviser at an investment platform.", "persona", "role",
            crit="Satisfied when the answer reads as a platform adviser explaining fund documents factually, "
                 "without personal recommendations. Not satisfied if it gives a buy/sell recommendation or "
                 "a salesy tone.")
FI_GAP = "Data Unavailable: the provided fund documents do not state this."

INSTANCES = [
    inst("financial-noisy-01", DOM,
         "What does it cost to invest in Class A versus Class I of the Orrinford Global Infrastructure Income "
         "Fund, including any fee for selling early, and what are the minimum investments?",
         "noisy", "natural",
         [
             ADVISOR,
             C("Write for a retail investor comparing share classes for the first time.", "persona", "audience",
               crit="Satisfied when terms such as OCF and redemption fee are briefly explained. Not satisfied if "
                    "jargon is used without explanation."),
             C("Present the comparison as a markdown table with at least 4 rows.", "output", "format",
               rule="enterprise:markdown_table", kw={"min_rows": 4}),
             C("Do not use figures from other Orrinford or Kestrel funds.", "knowledge_protocol",
               "source_filtering",
               crit="Satisfied when no Global Equity Fund values (3.00 percent entry charge, 1.45 percent OCF, "
                    "performance fee) or Kestrel values appear as OGIIF costs. Not satisfied otherwise."),
             cite_docs(1),
             gap_phrase(FI_GAP),
             conflict_both("charges"),
             C("Do not give a recommendation about which class to buy.", "output", "negative",
               crit="Satisfied when the answer contains no advice to choose a particular class. Not satisfied "
                    "if it recommends one."),
             no_emoji(),
         ],
         [use(P, "fi-ogi-fees", "supporting"), use(P, "fi-oge-fees", "noise"), use(P, "fi-kestrel-long", "noise"),
          use(P, "fi-esg", "noise"), use(P, "fi-staff-dealing", "noise"), use(P, "fi-commentary", "noise"),
          use(P, "fi-tax-note", "noise"), use(P, "fi-dilution", "noise"), use(P, "fi-ogi-perf", "noise")],
         notes="No entry charge; OCF 0.85% (A) vs 0.60% (I); 1.00% redemption fee within 90 days, paid into the fund; "
               "minimum EUR 1,000 (A) vs EUR 500,000 (I); no performance fee."),
    inst("financial-noisy-02", DOM,
         "How has the Orrinford Global Infrastructure Income Fund performed against its benchmark in each "
         "calendar year since launch?",
         "noisy", "natural",
         [
             ADVISOR,
             C("Present the years in chronological order.", "output", "ordering",
               rule="enterprise:ordered_list_items", kw={"order": "chronological"}),
             C("Use a bullet list with one bullet per year (at least 3 bullets).", "output", "format",
               rule="enterprise:bullet_list", kw={"min_items": 3}),
             C('Include the phrase "Past performance is not a reliable indicator of future results."', "output",
               "content", rule="enterprise:required_phrase",
               kw={"phrase": "Past performance is not a reliable indicator of future results."}),
             C("Name the benchmark index explicitly.", "output", "content",
               crit="Satisfied when the Ashby Global Core Infrastructure Index is named. Not satisfied otherwise."),
             cite_docs(1),
             gap_phrase(FI_GAP, lead="If a year's figure is missing from the documents"),
             conflict_both("performance figures"),
             hedge(["guaranteed", "will continue", "certainly"]),
         ],
         [use(P, "fi-commentary", "noise"), use(P, "fi-ogi-factsheet", "noise"), use(P, "fi-oge-fees", "noise"),
          use(P, "fi-esg", "noise"), use(P, "fi-kestrel-long", "noise"), use(P, "fi-tax-note", "noise"),
          use(P, "fi-staff-dealing", "noise"), use(P, "fi-dilution", "noise"), use(P, "fi-ogi-fees", "noise"),
          use(P, "fi-ogi-perf", "supporting")],
         notes="Launched 4 Jan 2021; 2021 9.4% vs 8.1% (+1.3); 2022 -3.2% vs -5.6% (+2.4); 2023 6.1% vs 7.0% (-0.9); "
               "benchmark Ashby Global Core Infrastructure Index; Class A EUR net of fees."),
    inst("financial-gap-01", DOM,
         "What is the maximum leverage or borrowing the Orrinford Global Infrastructure Income Fund is allowed "
         "to use?",
         "gap", "augmented",
         [
             ADVISOR,
             gap_phrase(FI_GAP),
             C("Do not attribute the Kestrel Long Duration fund's 50 percent derivative leverage limit to the "
               "Orrinford fund.", "knowledge_protocol", "source_filtering",
               crit="Satisfied when no leverage limit from another fund is presented as applying to OGIIF. Not "
                    "satisfied otherwise."),
             C("Name the document a client should request to find the answer, without inventing its contents.",
               "output", "content",
               crit="Satisfied when the response suggests a plausible source (e.g. the full prospectus investment "
                    "restrictions section or the fund's supplement) and makes no claim about what it says. Not "
                    "satisfied if no next step is given or a limit is invented."),
             cite_docs(1),
             conflict_both("leverage limits"),
             C("Keep the answer under 120 words.", "output", "content",
               rule="enterprise:word_count_range", kw={"min_words": 10, "max_words": 120}),
             no_emoji(),
         ],
         [use(P, "fi-ogi-fees", "partial"), use(P, "fi-kestrel-long", "noise"), use(P, "fi-ogi-factsheet", "partial"),
          use(P, "fi-dilution", "noise"), use(P, "fi-commentary", "noise"), use(P, "fi-esg", "noise"),
          use(P, "fi-ogi-perf", "noise")]),
    inst("financial-gap-02", DOM,
         "On days with large redemptions, what dilution adjustment factor is applied to the price of the "
         "Orrinford Global Infrastructure Income Fund?",
         "gap", "natural",
         [
             C("You are a fund operations analyst replying to an institutional client.", "persona", "role",
               crit="Satisfied when the answer is precise and operational, suitable for an institutional "
                    "client. Not satisfied if chatty or retail-oriented."),
             gap_phrase(FI_GAP),
             C("Do not state or estimate a numeric adjustment factor.", "knowledge_protocol", "uncertainty",
               crit="Satisfied when no percentage or basis-point factor is given for OGIIF. Not satisfied if any "
                    "numeric factor is offered, even as an estimate."),
             C("Note the difference between what the documents say about the Global Equity Fund and what they "
               "say about OGIIF.", "knowledge_protocol", "evidence_chaining",
               crit="Satisfied when the response explains that the pricing section mentions a dilution adjustment "
                    "only for the Global Equity Fund and says nothing specific about OGIIF. Not satisfied if "
                    "this distinction is missing or blurred."),
             cite_docs(1),
             conflict_both("dealing or pricing terms"),
             C('Start the answer with "Re:".', "output", "content",
               rule="enterprise:starts_with", kw={"prefix": "Re:"}),
         ],
         [use(P, "fi-dilution", "partial"), use(P, "fi-ogi-fees", "partial"), use(P, "fi-oge-fees", "noise"),
          use(P, "fi-staff-dealing", "noise"), use(P, "fi-tax-note", "noise"), use(P, "fi-kestrel-dist", "noise")]),
    inst("financial-conflict-01", DOM,
         "What is the ongoing charge for Class A shares of the Orrinford Global Infrastructure Income Fund?",
         "conflict", "augmented",
         [
             ADVISOR,
             conflict_both("the Class A ongoing charge"),
             C("Give the date or edition of each source next to its figure.", "knowledge_protocol",
               "evidence_chaining",
               crit="Satisfied when the prospectus (April 2024) and the factsheet (data as at 30 September "
                    "2024) dates accompany the two figures. Not satisfied if dates are omitted."),
             cite_docs(2),
             C("Answer in at most 2 paragraphs.", "output", "format",
               rule="enterprise:paragraph_count_range", kw={"min_paragraphs": 1, "max_paragraphs": 2}),
             gap_phrase(FI_GAP),
             C('Use the abbreviation "OCF" at least once.', "output", "content",
               rule="enterprise:keyword_frequency", kw={"keyword": "OCF", "min_count": 1, "max_count": 8}),
             no_emoji(),
         ],
         [use(P, "fi-commentary", "noise"),
          use(P, "fi-ogi-fees", "supporting", "g1",
              "OGIIF Class A ongoing charges: 0.85% (Prospectus, April 2024) vs 0.95% (Factsheet, Sept 2024)"),
          use(P, "fi-oge-fees", "noise"), use(P, "fi-esg", "noise"), use(P, "fi-tax-note", "noise"),
          use(P, "fi-ogi-factsheet", "conflicting", "g1",
              "OGIIF Class A ongoing charges: 0.85% (Prospectus, April 2024) vs 0.95% (Factsheet, Sept 2024)")],
         notes="Prospectus (April 2024): 0.85%; factsheet (30 Sept 2024): 0.95%. Both: no entry charge."),
    inst("financial-conflict-02", DOM,
         "How often does the distribution share class of the Kestrel Short Duration Bond Fund pay income, "
         "and can I reinvest it?",
         "conflict", "augmented",
         [
             C("Write for a retired investor who relies on the income.", "persona", "audience",
               crit="Satisfied when the answer is plain and practical for an income-dependent retiree. Not "
                    "satisfied if it is technical or aimed at professionals."),
             conflict_both("distribution frequency"),
             C("Use a numbered list with at least 3 items.", "output", "format",
               rule="enterprise:numbered_list", kw={"min_items": 3}),
             cite_docs(2),
             C("Do not use information about the Long Duration fund.", "knowledge_protocol", "source_filtering",
               crit="Satisfied when semi-annual (March/September) Long Duration payments are not presented as "
                    "the Short Duration fund's schedule. Not satisfied otherwise."),
             gap_phrase(FI_GAP),
             hedge(["guaranteed", "definitely", "always"]),
             C('End with "Please read the prospectus before investing."', "output", "content",
               rule="enterprise:ends_with", kw={"suffix": "Please read the prospectus before investing."}),
         ],
         [use(P, "fi-kestrel-web", "conflicting", "g1",
              "Kestrel SDB distribution frequency: quarterly (Prospectus, 2023) vs monthly (fund web page, Oct 2024)"),
          use(P, "fi-kestrel-long", "noise"), use(P, "fi-tax-note", "noise"), use(P, "fi-esg", "noise"),
          use(P, "fi-kestrel-dist", "supporting", "g1",
              "Kestrel SDB distribution frequency: quarterly (Prospectus, 2023) vs monthly (fund web page, Oct 2024)"),
          use(P, "fi-dilution", "noise"), use(P, "fi-commentary", "noise")],
         notes="Prospectus: quarterly, ex-dates first business day of Feb/May/Aug/Nov, paid within 20 business days; "
               "web page: monthly. Both: reinvestment at no cost; distributions vary."),
]
