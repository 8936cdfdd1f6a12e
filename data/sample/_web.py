"""Web Search domain: fictional products, cities and news sites."""

from _kit import C, D, cite_docs, conflict_both, gap_phrase, hedge, inst, no_emoji, use

DOM = "Web Search"
P = {}


def _add(*docs):
    for d in docs:
        P[d["doc_id"]] = d


_add(
    D("ws-vela7-spec", "Quillon Vela 7: technical specifications",
      "quillon.example/vela7/specs, official product page, retrieved February 2025",
      """<h1>Quillon Vela 7</h1>
<p>Our most efficient phone yet, built around the Quillon Q9 chipset.</p>
<table>
<tr><th>Battery</th><td>5,100 mAh, two-day typical use</td></tr>
<tr><th>Wired charging</th><td>45 W, 0 to 70 percent in 30 minutes</td></tr>
<tr><th>Wireless charging</th><td>15 W Qi2</td></tr>
<tr><th>Display</th><td>6.4 inch OLED, 1 to 120 Hz</td></tr>
<tr><th>Storage</th><td>256 GB or 512 GB</td></tr>
<tr><th>Weight</th><td>188 g</td></tr>
</table>
<p>Charger sold separately. Battery life figures are measured in Quillon's lab under a mixed-use profile.</p>
<button onclick="addToBasket('vela7-256')">Pre-order now</button>
<script src="https://cdn.quillon.example/track.js"></script>""", "html"),
    D("ws-vela7-press", "Quillon announces the Vela 7",
      "Quillon Mobile press release, Port Elvane, 28 January 2025",
      """Quillon Mobile today announced the Vela 7 smartphone, which goes on sale in Vessaria and neighbouring
      markets on 14 March 2025. Pre-orders open on 3 February. The Vela 7 starts at 649 VSC for the 256 GB model
      and 749 VSC for 512 GB, in three colours: Slate, Tidal Blue and Sand. 'The Vela 7 is about lasting all
      weekend on a single charge,' said product director Maren Oksby. Quillon will support the Vela 7 with
      software updates for six years."""),
    D("ws-vela7-rumour", "Vela 7 launch slips a week, retail sources say",
      "PocketSignal (technology blog), article dated 10 February 2025",
      """Two retail staff in Port Elvane told PocketSignal that store displays for the Quillon Vela 7 are now
      scheduled for 21 March 2025, a week later than planned, because of a shipping delay on the Slate colour.
      According to one source, pre-ordered phones will be delivered on the same date. Quillon did not respond to
      our request for comment by the time of publication. We will update this article if the company confirms
      the date."""),
    D("ws-vela6-review", "Quillon Vela 6 review: a year on",
      "Gadgetlane review, November 2024",
      """A year after launch, the Vela 6 remains a solid mid-range choice. Its 4,700 mAh battery still lasts a
      full day, and 33 W charging gets it to half in about 25 minutes. The phone is rated IP67 for dust and
      water, survived our rain test without issue, and the 6.3-inch screen is bright enough outdoors. Weak
      points are the slow ultrawide camera and the plastic frame. At its reduced price of 449 VSC it is good
      value, but buyers may want to wait for the Vela 7."""),
    D("ws-quillon-tab", "Quillon Tab S launch details",
      "Quillon Mobile press release, 5 September 2024",
      """The Quillon Tab S tablet, with an 11-inch display and 8,800 mAh battery, is available from 20 September
      2024 at 399 VSC. It supports the Quillon Pen, sold separately for 59 VSC. The Tab S charges at 30 W and
      offers four years of software updates. Pre-orders include a free folio cover while stocks last. The Tab S
      is sold in Graphite and Sand and is not water-resistant; Quillon recommends the rugged case for outdoor
      use."""),
    D("ws-forum-charging", "Forum thread: does the Vela 7 charge faster than 45 W?",
      "ElvaneTech community forum, thread posted 2 February 2025",
      """User 'voltmoth' wrote: my cousin works at a repair shop and says the Vela 7 can do 65 W with the right
      charger, Quillon just does not advertise it. User 'kettlebird' replied: that sounds like the prototype
      units, nobody has tested a retail phone yet. User 'voltmoth': fair, but I would wait before buying a 45 W
      brick. The thread has 14 replies and no confirmation from Quillon staff or reviewers. Posts reflect the
      opinions of individual members."""),
    D("ws-metro-l4", "Metro Line 4 to open on 2 June",
      "Port Elvane Transit Authority news release, 15 January 2025",
      """The Port Elvane Transit Authority confirmed today that Metro Line 4 will open to passengers on 2 June
      2025. The 14-kilometre line has 11 stations between Saltmarsh and Greyfield Park, with interchanges to
      Line 1 at Central Exchange and to Line 2 at Harbour Gate. Trains will run every 4 minutes at peak times.
      Fares on Line 4 will be the same as on the rest of the metro network. Final safety approval from the
      national railway inspectorate is expected in May."""),
    D("ws-metro-delay", "Line 4 opening pushed back to September",
      "The Elvane Courier, news article, 3 April 2025",
      """The opening of Port Elvane's Metro Line 4 has been postponed to 15 September 2025, the Courier has
      learned, after signalling tests at Harbour Gate revealed faults that must be fixed before the national
      inspectorate can approve the line. A Transit Authority spokesperson said the new date was 'our planning
      assumption' and that a formal announcement would follow. The line's 11 stations are otherwise complete."""),
    D("ws-tram", "Elvane Tramways: fares from January 2025",
      "Elvane Tramways fare notice, December 2024",
      """Elvane Tramways operates the four tram routes in the old town. From 1 January 2025 a single tram ticket
      costs 2.40 VSC, a day pass 7.00 VSC and a monthly pass 58 VSC. Students with a valid university card pay
      1.20 VSC for a single ticket. Tram tickets are not valid on the metro, which is operated by the Port
      Elvane Transit Authority with its own fares. Tickets can be bought from stop machines or in the app."""),
    D("ws-l4-jobs", "Line 4 recruitment drive",
      "Port Elvane Transit Authority careers page, 2024",
      """The Transit Authority is recruiting 120 staff to operate Metro Line 4, including station supervisors,
      control-room operators and maintenance technicians. Training takes place at the Greyfield Park depot
      over 12 weeks. Applicants need a full driving licence for technician roles. Applications close on
      31 October 2024. The Authority offers a relocation allowance for candidates moving to Port Elvane, and successful applicants
      receive a free network travel pass."""),
    D("ws-ridership", "Port Elvane metro ridership, 2024",
      "Port Elvane Transit Authority annual statistics, published February 2025",
      """| Line | Stations | Average weekday journeys | Change vs 2023 |
|---|---|---|---|
| Line 1 | 18 | 212,000 | +4% |
| Line 2 | 14 | 148,000 | +6% |
| Line 3 | 12 | 97,000 | +2% |

Line 4 is not yet in service and is excluded. Journeys are counted at entry gates; transfers between lines
within 60 minutes count as one journey. Figures are rounded to the nearest thousand.""", "markdown_table"),
    D("ws-weather", "Port Elvane weekend weather",
      "Elvane Courier weather page, 1 March 2025",
      """A band of rain crosses Port Elvane on Saturday morning with gusts of up to 70 km/h along the harbour
      front. Ferry services to the outer islands may be cancelled. Sunday will be brighter and cooler, with a
      high of 9 C. The council has closed the Saltmarsh boardwalk until Monday while storm damage is
      repaired. Drivers should expect delays on the coast road."""),
)

WS_GAP = "I could not find this in the retrieved sources."
JOURNO = C("You are a consumer-technology journalist writing a short reader Q&A.", "persona", "role",
           crit="Satisfied when the answer reads as a journalist's concise, factual reader reply. Not satisfied if "
                "it is an advert or a corporate statement.")
CRED = C("Prefer official sources over forum posts and rumours; label any unconfirmed claim as unconfirmed.",
         "knowledge_protocol", "source_filtering",
         crit="Satisfied when information from forums or anonymous sources is either left out or explicitly "
              "labelled as unconfirmed, and official pages/press releases are used for the main facts. Not "
              "satisfied if an unconfirmed claim is stated as fact.")

INSTANCES = [
    inst("web-noisy-01", DOM,
         "How big is the Quillon Vela 7 battery and how fast does it charge, wired and wireless?",
         "noisy", "natural",
         [
             JOURNO,
             CRED,
             C("Use a bullet list with at least 3 items.", "output", "format",
               rule="enterprise:bullet_list", kw={"min_items": 3}),
             C("Keep it under 120 words.", "output", "content",
               rule="length_constraints:number_words", kw={"num_words": 120, "relation": "less than"}),
             C("Do not mention other Quillon devices.", "output", "negative",
               rule="keywords:forbidden_words", kw={"forbidden_words": ["Vela 6", "Tab S"]}),
             cite_docs(1),
             gap_phrase(WS_GAP),
             conflict_both("battery or charging specifications"),
         ],
         [use(P, "ws-vela7-spec", "supporting"), use(P, "ws-vela6-review", "noise"), use(P, "ws-quillon-tab", "noise"),
          use(P, "ws-forum-charging", "noise"), use(P, "ws-weather", "noise"), use(P, "ws-ridership", "noise"),
          use(P, "ws-tram", "noise"), use(P, "ws-l4-jobs", "noise")],
         notes="5,100 mAh; 45 W wired (0-70% in 30 min); 15 W Qi2 wireless; charger sold separately. The 65 W forum "
               "claim is unconfirmed and should be omitted or labelled."),
    inst("web-noisy-02", DOM,
         "How many stations will Port Elvane Metro Line 4 have, and where can I change to Lines 1 and 2?",
         "noisy", "natural",
         [
             C("Write for a commuter reading on a phone.", "persona", "audience",
               crit="Satisfied when the answer is short, scannable and practical for a commuter. Not satisfied if "
                    "it is a long report."),
             C("Answer in JSON with the keys \"stations\", \"interchanges\" and \"sources\".", "output", "format",
               rule="enterprise:json_object", kw={"required_keys": ["stations", "interchanges", "sources"]}),
             C('List sources inside the JSON as document references like "[doc 5]".', "knowledge_protocol",
               "citation", rule="enterprise:citation_count", kw={"pattern": "doc_ref", "min_distinct": 1}),
             C("Do not include tram information.", "output", "negative",
               crit="Satisfied when nothing about Elvane Tramways routes or fares appears. Not satisfied "
                    "otherwise."),
             gap_phrase(WS_GAP),
             conflict_both("station count or interchanges"),
             no_emoji(),
         ],
         [use(P, "ws-tram", "noise"), use(P, "ws-ridership", "noise"), use(P, "ws-l4-jobs", "noise"),
          use(P, "ws-weather", "noise"), use(P, "ws-vela7-press", "noise"), use(P, "ws-metro-l4", "supporting"),
          use(P, "ws-quillon-tab", "noise"), use(P, "ws-vela6-review", "noise")],
         notes="11 stations (Saltmarsh to Greyfield Park); Line 1 at Central Exchange, Line 2 at Harbour Gate."),
    inst("web-gap-01", DOM,
         "What is the Quillon Vela 7's IP water- and dust-resistance rating?",
         "gap", "augmented",
         [
             JOURNO,
             gap_phrase(WS_GAP),
             C("Do not assume the Vela 6 rating carries over to the Vela 7.", "knowledge_protocol", "uncertainty",
               crit="Satisfied when IP67 is not presented as the Vela 7 rating. Mentioning that the Vela 6 is "
                    "IP67 is acceptable only if it is explicitly said not to confirm the Vela 7 rating. Not "
                    "satisfied if any rating is attributed to the Vela 7."),
             CRED,
             cite_docs(1),
             conflict_both("specifications"),
             C("Keep the answer to a single paragraph.", "output", "format",
               rule="enterprise:paragraph_count_range", kw={"min_paragraphs": 1, "max_paragraphs": 1}),
             no_emoji(),
         ],
         [use(P, "ws-vela6-review", "noise"), use(P, "ws-vela7-spec", "partial"), use(P, "ws-vela7-press", "partial"),
          use(P, "ws-forum-charging", "noise"), use(P, "ws-quillon-tab", "noise"), use(P, "ws-weather", "noise")]),
    inst("web-gap-02", DOM,
         "How much will a student single ticket on Port Elvane Metro Line 4 cost?",
         "gap", "augmented",
         [
             C("Write for university students new to the city.", "persona", "audience",
               crit="Satisfied when the reply is friendly and practical for students. Not satisfied if it is "
                    "formal policy language."),
             gap_phrase(WS_GAP),
             C("Do not quote tram fares as metro fares.", "knowledge_protocol", "source_filtering",
               crit="Satisfied when 1.20 VSC (tram student single) or other tram fares are not given as the "
                    "Line 4 price. Not satisfied otherwise."),
             C("Suggest where the fare could be checked, without inventing it.", "output", "content",
               crit="Satisfied when the reply points to the Transit Authority's metro fare information as the "
                    "place to check, with no invented price. Not satisfied otherwise."),
             cite_docs(1),
             conflict_both("fares"),
             C('Add a short postscript starting with "P.S." reminding students to carry their student card.',
               "output", "content", rule="detectable_content:postscript", kw={"postscript_marker": "P.S."}),
         ],
         [use(P, "ws-tram", "noise"), use(P, "ws-metro-l4", "partial"), use(P, "ws-ridership", "noise"),
          use(P, "ws-l4-jobs", "noise"), use(P, "ws-metro-delay", "noise"), use(P, "ws-weather", "noise")]),
    inst("web-conflict-01", DOM,
         "When does the Quillon Vela 7 go on sale, and how much does it cost?",
         "conflict", "augmented",
         [
             JOURNO,
             conflict_both("the on-sale date"),
             C("Give the publication date of each source so readers can judge freshness.", "knowledge_protocol",
               "evidence_chaining",
               crit="Satisfied when the press release date (28 January 2025) and the blog article date (10 "
                    "February 2025) accompany the two launch dates. Not satisfied otherwise."),
             CRED,
             cite_docs(2),
             C("Use markdown headings with at least 2 sections (e.g. Date, Price).", "output", "format",
               rule="enterprise:section_count", kw={"min_sections": 2}),
             gap_phrase(WS_GAP),
             no_emoji(),
         ],
         [use(P, "ws-vela6-review", "noise"),
          use(P, "ws-vela7-press", "supporting", "g1",
              "Vela 7 on-sale date: 14 March 2025 (Quillon press release, 28 Jan 2025) vs 21 March 2025 (PocketSignal, 10 Feb 2025)"),
          use(P, "ws-quillon-tab", "noise"), use(P, "ws-forum-charging", "noise"),
          use(P, "ws-vela7-rumour", "conflicting", "g1",
              "Vela 7 on-sale date: 14 March 2025 (Quillon press release, 28 Jan 2025) vs 21 March 2025 (PocketSignal, 10 Feb 2025)"),
          use(P, "ws-vela7-spec", "noise")],
         notes="Press release: 14 March 2025; blog (retail sources, unconfirmed): 21 March 2025. Price 649 VSC (256 GB) "
               "/ 749 VSC (512 GB); pre-orders from 3 February."),
    inst("web-conflict-02", DOM,
         "When will Port Elvane Metro Line 4 open?",
         "conflict", "natural",
         [
             C("Write for readers of a local news digest.", "persona", "audience",
               crit="Satisfied when the tone suits a general local readership (plain, informative). Not "
                    "satisfied if it is technical or promotional."),
             conflict_both("the opening date"),
             C("State which source is more recent, without concluding which date is correct.",
               "knowledge_protocol", "uncertainty",
               crit="Satisfied when the answer notes the April 2025 article is newer than the January release and "
                    "that the new date is described as a planning assumption awaiting formal announcement, "
                    "without declaring either date final. Not satisfied otherwise."),
             cite_docs(2),
             C("Use 80 to 180 words.", "output", "content",
               rule="enterprise:word_count_range", kw={"min_words": 80, "max_words": 180}),
             C('End with "Check the Transit Authority website for updates."', "output", "content",
               rule="enterprise:ends_with", kw={"suffix": "Check the Transit Authority website for updates."}),
             gap_phrase(WS_GAP),
             hedge(["definitely", "confirmed for", "guaranteed"]),
         ],
         [use(P, "ws-l4-jobs", "noise"), use(P, "ws-tram", "noise"),
          use(P, "ws-metro-l4", "supporting", "g1",
              "Line 4 opening date: 2 June 2025 (Transit Authority release, 15 Jan 2025) vs 15 September 2025 (Elvane Courier, 3 Apr 2025)"),
          use(P, "ws-ridership", "noise"), use(P, "ws-weather", "noise"),
          use(P, "ws-metro-delay", "conflicting", "g1",
              "Line 4 opening date: 2 June 2025 (Transit Authority release, 15 Jan 2025) vs 15 September 2025 (Elvane Courier, 3 Apr 2025)"),
          use(P, "ws-vela7-press", "noise")],
         notes="Authority (15 Jan 2025): 2 June 2025, pending May safety approval; Courier (3 Apr 2025): postponed to "
               "15 September 2025 after signalling faults, a 'planning assumption' pending formal announcement."),
]
