"""Party Building domain: governance and member affairs of the (fictional) Lindenmere Civic Association."""

from _kit import C, D, cite_docs, conflict_both, gap_phrase, hedge, inst, no_emoji, use

DOM = "Party Building"
P = {}


def _add(*docs):
    for d in docs:
        P[d["doc_id"]] = d


_add(
    D("pb-bylaws-12", "Bylaws, Article 12: branch general meetings",
      "Lindenmere Civic Association Bylaws, as amended by the 9th Congress, 2022",
      """Article 12. (1) Each local branch shall hold a general meeting of its members at least once every
      quarter. (2) The branch secretary sends notice with the agenda at least 10 days before the meeting. (3)
      The quorum is one third of the branch's members in good standing. (4) If the quorum is not reached, the
      meeting is adjourned by at least 7 days and the reconvened meeting may proceed with the members present.
      (5) Minutes are signed by the chair and the secretary and filed with the regional office within 10 days."""),
    D("pb-circular-quorum", "Secretariat Circular 2024/03: branch meeting arrangements",
      "Lindenmere Civic Association, General Secretariat Circular 2024/03, 18 April 2024",
      """To strengthen the legitimacy of branch decisions, branch general meetings shall be regarded as
      quorate only when at least half of the branch's members in good standing are present in person or
      online. Branch secretaries should send the agenda at least 10 days in advance and file signed minutes
      with the regional office within 10 days, as before. Branches are encouraged to offer an online
      participation link for every meeting. This circular takes effect on 1 May 2024."""),
    D("pb-youth", "Youth Section Charter, sections 4-5",
      "Lindenmere Civic Association Youth Section Charter, 2021",
      """Section 4. Members aged 16 to 30 may join the Youth Section of their branch. The Youth Section meets at
      least twice a year; its quorum is one quarter of its registered members. Section 5. The Youth Section
      elects a coordinator for a two-year term by show of hands. The coordinator attends branch committee
      meetings without a vote. Youth Section budgets are approved by the branch treasurer."""),
    D("pb-dues", "Membership Dues Regulation, sections 2-4",
      "Lindenmere Civic Association Dues Regulation, approved by the Central Council, January 2023",
      """Section 2. Annual dues are 36 LCU for employed members, 12 LCU for students, retirees and members
      receiving income support, and 60 LCU for household memberships of up to four people. Section 3. Dues are
      payable by 31 January or in monthly instalments by direct debit. Section 4. (1) A member whose dues are
      more than 6 months in arrears receives a reminder from the branch treasurer. (2) If the arrears are not
      settled within a further 30 days, the member's status becomes lapsed; a lapsed member cannot vote or
      stand for office until the arrears are paid."""),
    D("pb-treasurer-faq", "Treasurers' FAQ: arrears and lapsed members",
      "Lindenmere Civic Association treasurers' handbook, FAQ section, 2024 edition",
      """When does a member lapse? If dues are more than 3 months in arrears, send the standard reminder
      letter; if the member has not paid within 30 days of the reminder, record their status as lapsed in the
      membership system. Lapsed members lose voting rights and cannot stand for branch office until they
      settle in full. Can a branch waive arrears? Only the regional treasurer can approve a waiver, for example
      in cases of serious illness. Keep a copy of every reminder letter."""),
    D("pb-elections", "Branch committee elections procedure",
      "Lindenmere Civic Association Election Rules, Part II, 2022",
      """Branch committees (chair, secretary, treasurer and two ordinary members) are elected for a term of
      three years at the branch general meeting. Nominations must reach the branch secretary at least 14 days
      before the election meeting, each signed by two members in good standing and accepted in writing by the
      candidate. Voting is by secret ballot; where a post has a single candidate, the meeting may elect by
      show of hands unless any member objects. Two tellers who are not candidates count the votes. A member
      may hold no more than two consecutive terms in the same post."""),
    D("pb-conduct", "Code of Conduct for members",
      "Lindenmere Civic Association Code of Conduct, 2023",
      """Members treat each other with respect in meetings, online groups and public events. Harassment,
      discrimination and the deliberate spreading of false information about fellow members are not tolerated.
      Members speaking to the media on behalf of the Association need prior approval from the regional
      communications officer. Concerns about conduct can be raised with the branch chair or the regional
      ombudsperson. Serious breaches may lead to disciplinary measures under Article 30 of the Bylaws,
      including suspension of membership."""),
    D("pb-volunteer-awards", "Volunteer recognition awards",
      "Lindenmere Civic Association, Central Council decision CC-2023-11",
      """Each year the Central Council presents up to ten Volunteer Recognition Awards to members whose work
      has strengthened their community. Branches may nominate one member per year by 30 September, with a
      300-word statement and two references. A panel of three Council members selects the winners, who are
      announced at the annual congress. Award holders receive a certificate and free registration for the
      next congress."""),
    D("pb-hall", "Booking the Association hall",
      "Lindenmere Civic Association regional office notice, 2024",
      """Branches may book the Association hall at 14 Weir Street free of charge for general meetings and at
      a reduced rate of 20 LCU per hour for other events. Bookings are made through the regional office at
      least three weeks in advance. The hall seats 120 people and has a hearing loop and step-free access.
      The booking branch is responsible for locking up and returning the key by 10:00 the next day."""),
    D("pb-congress-seats", "Delegate allocation for the 10th Congress",
      "Lindenmere Civic Association Central Council decision CC-2024-04",
      """| Region | Members in good standing (31 Dec 2023) | Delegates |
|---|---|---|
| Northern Lakes | 4,120 | 41 |
| Weirside | 2,870 | 29 |
| Old Harbour | 1,940 | 19 |
| Eastfields | 1,065 | 11 |

One delegate is allocated per 100 members in good standing, rounded to the nearest whole number. Regions
elect their delegates at regional assemblies no later than eight weeks before the congress.""",
      "markdown_table"),
    D("pb-portal", "Member portal: update your details",
      "Lindenmere Civic Association member portal help page, 2024",
      """<h2>Update your details</h2>
<p>Keep your address, e-mail and branch up to date so you receive meeting notices on time.</p>
<ul>
<li>Log in and choose <b>My membership</b>.</li>
<li>Change your branch only if you have moved; your new branch secretary is notified automatically.</li>
<li>Dues payments made in the last 48 hours may not yet be shown.</li>
</ul>
<script>window.portalBanner = "Renew before 31 January";</script>
<p onclick="showHelp()">Need help? Contact your branch secretary.</p>""", "html"),
    D("pb-comms", "Communication guidelines for branches",
      "Lindenmere Civic Association communications handbook, 2023",
      """Branch social media accounts must be registered with the regional office and have at least two
      administrators. Posts should be factual and courteous and must not endorse commercial products.
      Photographs of members at events require their consent. Newsletters are sent at least quarterly and
      should include the date of the next general meeting. Press enquiries are passed to the regional
      communications officer."""),
)

SEC = C("You are the regional organising secretary advising branch officers.", "persona", "role",
        crit="Satisfied when the response reads as guidance from a regional secretary to branch officers: "
             "procedural, neutral and precise. Not satisfied if it is promotional or addressed to the public.")
PB_GAP = "The current rules provided do not address this point; please consult the regional office."
STYLE = C("Keep a neutral, formal administrative tone with no opinions about the rules.", "output", "style",
          crit="Satisfied when the text is formal and neutral, describing rules without praising or criticising "
               "them. Not satisfied if it contains opinions, exhortations or casual language.")

INSTANCES = [
    inst("party-noisy-01", DOM,
         "What is the quorum for a branch general meeting, how often must one be held, and what happens if the "
         "quorum is not reached?",
         "noisy", "natural",
         [
             SEC,
             STYLE,
             C("Use a numbered list with at least 4 points.", "output", "format",
               rule="enterprise:numbered_list", kw={"min_items": 4}),
             C("Do not use Youth Section rules for branch general meetings.", "knowledge_protocol",
               "source_filtering",
               crit="Satisfied when the Youth Section quorum (one quarter) and meeting frequency are not given as "
                    "the branch rules. Not satisfied otherwise."),
             cite_docs(1),
             gap_phrase(PB_GAP),
             conflict_both("the quorum"),
             no_emoji(),
         ],
         [use(P, "pb-youth", "noise"), use(P, "pb-hall", "noise"), use(P, "pb-volunteer-awards", "noise"),
          use(P, "pb-comms", "noise"), use(P, "pb-bylaws-12", "supporting"), use(P, "pb-conduct", "noise"),
          use(P, "pb-portal", "noise"), use(P, "pb-congress-seats", "noise"), use(P, "pb-dues", "noise")],
         notes="At least quarterly; quorum one third of members in good standing; if not quorate, adjourn by at least "
               "7 days, reconvened meeting proceeds with those present; notice 10 days; minutes filed in 10 days."),
    inst("party-noisy-02", DOM,
         "Our branch elects a new committee next month. What are the rules for nominations and voting?",
         "noisy", "natural",
         [
             SEC,
             C("Write for first-time branch secretaries organising an election.", "persona", "audience",
               crit="Satisfied when the answer gives practical steps a newcomer can follow (deadlines, who "
                    "signs, who counts). Not satisfied if it only restates rules abstractly."),
             C('Use markdown headings "Nominations" and "Voting" (at least 2 sections).', "output", "format",
               rule="enterprise:section_count", kw={"min_sections": 2}),
             C("Keep the answer between 90 and 220 words.", "output", "content",
               rule="enterprise:word_count_range", kw={"min_words": 90, "max_words": 220}),
             STYLE,
             cite_docs(1),
             gap_phrase(PB_GAP),
             conflict_both("election rules"),
             hedge(["guaranteed", "always"]),
         ],
         [use(P, "pb-hall", "noise"), use(P, "pb-youth", "noise"), use(P, "pb-comms", "noise"),
          use(P, "pb-dues", "partial"), use(P, "pb-conduct", "noise"), use(P, "pb-volunteer-awards", "noise"),
          use(P, "pb-congress-seats", "noise"), use(P, "pb-portal", "noise"), use(P, "pb-elections", "supporting")],
         notes="Committee of 5 (chair, secretary, treasurer, 2 ordinary) for 3 years; nominations 14 days before, "
               "signed by 2 members in good standing, accepted in writing; secret ballot, show of hands for single "
               "candidates unless anyone objects; 2 non-candidate tellers; max 2 consecutive terms per post; "
               "lapsed members cannot stand (dues regulation)."),
    inst("party-gap-01", DOM,
         "A member of our branch has been suspended. How can she appeal the suspension, and how long does the "
         "appeal body have to decide?",
         "gap", "augmented",
         [
             SEC,
             gap_phrase(PB_GAP),
             C("Do not describe an appeal route that is not in the documents.", "knowledge_protocol",
               "uncertainty",
               crit="Satisfied when no appeal body, deadline or procedure is invented (noting that the Code of "
                    "Conduct refers to Article 30 of the Bylaws, which is not provided, is good). Not satisfied "
                    "if an appeal procedure or time limit is described."),
             C("Do not reuse meeting, election or dues deadlines (10, 14 or 30 days) as appeal deadlines.",
               "output", "negative",
               crit="Satisfied when no such deadline is presented as an appeal time limit. Not satisfied "
                    "otherwise."),
             STYLE,
             cite_docs(1),
             conflict_both("disciplinary rules"),
             C("Keep the answer under 130 words.", "output", "content",
               rule="length_constraints:number_words", kw={"num_words": 130, "relation": "less than"}),
         ],
         [use(P, "pb-conduct", "partial"), use(P, "pb-bylaws-12", "noise"), use(P, "pb-elections", "noise"),
          use(P, "pb-dues", "noise"), use(P, "pb-comms", "noise"), use(P, "pb-youth", "noise"),
          use(P, "pb-treasurer-faq", "noise")]),
    inst("party-gap-02", DOM,
         "If a member resigns in June after paying the full year's dues in January, is part of the dues "
         "refunded?",
         "gap", "augmented",
         [
             C("You are the branch treasurer replying by e-mail to the member.", "persona", "role",
               crit="Satisfied when the reply is a courteous e-mail from a treasurer to a member. Not satisfied if "
                    "it is an internal memo or a legal essay."),
             C('Start with "Dear member,".', "output", "content",
               rule="enterprise:starts_with", kw={"prefix": "Dear member,"}),
             gap_phrase(PB_GAP),
             C("Do not calculate a pro-rata refund.", "knowledge_protocol", "uncertainty",
               crit="Satisfied when no refund amount or proportion is computed or promised. Not satisfied if a "
                    "figure such as 18 LCU or 'half the dues' is offered."),
             cite_docs(1),
             conflict_both("dues amounts"),
             STYLE,
             no_emoji(),
         ],
         [use(P, "pb-dues", "partial"), use(P, "pb-treasurer-faq", "partial"), use(P, "pb-portal", "noise"),
          use(P, "pb-hall", "noise"), use(P, "pb-volunteer-awards", "noise"), use(P, "pb-comms", "noise")]),
    inst("party-conflict-01", DOM,
         "How many members must be present for a branch general meeting to be quorate?",
         "conflict", "augmented",
         [
             SEC,
             conflict_both("the quorum"),
             C("Mention the effective date of any circular cited.", "knowledge_protocol", "evidence_chaining",
               crit="Satisfied when the circular's effective date (1 May 2024) or issue date (18 April 2024) "
                    "is given. Not satisfied otherwise."),
             cite_docs(2),
             C("Use a bullet list with at least 2 items.", "output", "format",
               rule="enterprise:bullet_list", kw={"min_items": 2}),
             gap_phrase(PB_GAP),
             STYLE,
             hedge(["definitely", "inevitably", "certainly"]),
         ],
         [use(P, "pb-youth", "noise"), use(P, "pb-hall", "noise"),
          use(P, "pb-bylaws-12", "supporting", "g1",
              "Branch meeting quorum: one third (Bylaws Art. 12(3), 2022) vs one half (Secretariat Circular 2024/03)"),
          use(P, "pb-elections", "noise"), use(P, "pb-comms", "noise"),
          use(P, "pb-circular-quorum", "conflicting", "g1",
              "Branch meeting quorum: one third (Bylaws Art. 12(3), 2022) vs one half (Secretariat Circular 2024/03)"),
          use(P, "pb-congress-seats", "noise")],
         notes="Bylaws Art. 12(3): one third of members in good standing; Circular 2024/03 (effective 1 May 2024): at "
               "least half, in person or online."),
    inst("party-conflict-02", DOM,
         "After how many months of unpaid dues does a member's status become lapsed, and what does lapsing mean?",
         "conflict", "natural",
         [
             C("You are the regional treasurer briefing branch treasurers.", "persona", "role",
               crit="Satisfied when the voice is a regional treasurer instructing branch treasurers. Not "
                    "satisfied if addressed to members or the public."),
             conflict_both("the arrears period"),
             C("Show both positions in a markdown table with at least 2 rows.", "output", "format",
               rule="enterprise:markdown_table", kw={"min_rows": 2}),
             cite_docs(2),
             C("Point out which document is the approved regulation.", "knowledge_protocol", "source_filtering",
               crit="Satisfied when the Dues Regulation is identified as approved by the Central Council and the "
                    "FAQ as handbook guidance, while both periods are reported. Not satisfied otherwise."),
             gap_phrase(PB_GAP),
             STYLE,
             no_emoji(),
         ],
         [use(P, "pb-treasurer-faq", "conflicting", "g1",
              "Arrears before reminder/lapse: more than 6 months (Dues Regulation s.4, 2023) vs more than 3 months (Treasurers' FAQ, 2024)"),
          use(P, "pb-portal", "noise"), use(P, "pb-volunteer-awards", "noise"), use(P, "pb-hall", "noise"),
          use(P, "pb-dues", "supporting", "g1",
              "Arrears before reminder/lapse: more than 6 months (Dues Regulation s.4, 2023) vs more than 3 months (Treasurers' FAQ, 2024)"),
          use(P, "pb-bylaws-12", "noise"), use(P, "pb-comms", "noise"), use(P, "pb-elections", "partial")],
         notes="Regulation: reminder after >6 months arrears, lapse if unpaid 30 days later; FAQ: >3 months then 30 "
               "days. Both: lapsed members cannot vote or stand until arrears are paid."),
]
