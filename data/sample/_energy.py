"""Energy domain: Northvale Grid (fictional transmission & generation operator)."""

from _kit import C, D, cite_docs, conflict_both, gap_phrase, hedge, inst, no_emoji, use

DOM = "Energy"
P = {}


def _add(*docs):
    for d in docs:
        P[d["doc_id"]] = d


_add(
    D("en-kx40-sf6", "KX-40 gas-insulated switchgear: SF6 density supervision",
      "Northvale Grid Operations Manual, vol. 3, rev. 4, 2023",
      """Section 7.2 applies to all KX-40 145 kV gas-insulated switchgear bays installed by Northvale Grid.
      The SF6 density of every gas compartment shall be inspected every 18 months, and additionally after any
      internal fault or compartment opening. Density readings are taken from the temperature-compensated
      monitor and recorded in AssetLine under work type GIS-DEN. Alarm stage 1 is set at 0.52 MPa absolute
      (referred to 20 C); stage 2 blocks breaker operation at 0.48 MPa. When stage 1 is raised, the
      technician shall (1) confirm the reading with a calibrated portable gauge, (2) perform a leak search
      with the infrared camera on flanges and the density monitor connection, (3) top up with certified gas
      to the rated 0.60 MPa, and (4) schedule a repeat reading within 14 days. Two stage 1 alarms on the same
      compartment within 12 months require referral to the Switchgear Engineering team."""),
    D("en-kx40-bulletin", "Field Bulletin FB-2024-07: KX-40 density inspections",
      "Northvale Grid Field Bulletin FB-2024-07, issued 9 July 2024",
      """Following slow SF6 losses found on three KX-40 bays at Tarrow 220/145 kV substation, Field
      Operations has reviewed the supervision regime for this switchgear family. With effect from 1 August
      2024, the SF6 density of every KX-40 gas compartment shall be inspected every 12 months. The stage 1
      alarm setting of 0.52 MPa and the stage 2 blocking setting of 0.48 MPa are unchanged. Crews should
      create the inspection work orders in AssetLine under work type GIS-DEN as before. This bulletin was
      circulated to depot supervisors; the Operations Manual has not yet been reissued."""),
    D("en-kx24-sf6", "KX-24 switchgear (legacy): gas handling and joint torques",
      "Northvale Grid Operations Manual, vol. 3, rev. 2, 2017 (legacy equipment annex)",
      """The KX-24 72.5 kV switchgear, in service at Dunmere and Old Quay substations only, uses a mechanical
      pointer density relay without temperature compensation. Inspect gas density every 24 months. The alarm
      contact operates at 0.40 MPa and the lockout contact at 0.36 MPa. Before topping up, compensate the
      reading using chart K-7. After any compartment opening, retighten the busbar bolted joints with M12
      bolts to 70 Nm and M16 bolts to 150 Nm, and renew the O-rings. The KX-24 family is scheduled for
      replacement by 2027 and no new spares are being ordered."""),
    D("en-tr63-dga", "Helvan TR-63 power transformer: oil sampling and DGA",
      "Northvale Grid Transformer Maintenance Manual, rev. 6, 2022",
      """Helvan TR-63 units (63 MVA, 145/33 kV) shall be oil-sampled for dissolved gas analysis (DGA) every 6
      months and after any Buchholz alarm. Samples are taken from the bottom drain valve into 500 ml glass
      syringes and shipped to the Ferrow Lane laboratory within 48 hours. Acetylene (C2H2) above 2 ppm triggers
      a confirmatory re-sample within 7 days; if the re-sample also exceeds 2 ppm, the unit is placed on
      monthly sampling and referred to Transformer Engineering. Moisture above 20 ppm requires an oil
      processing work order. Results are entered into AssetLine against the unit's functional location."""),
    D("en-tr63-migrated", "AssetLine maintenance plan MP-TR63-DGA (migrated record)",
      "AssetLine ERP record export, migrated from Meridian ERP, March 2024",
      """Maintenance plan MP-TR63-DGA was migrated automatically from Meridian ERP task list TL-4471 during the
      AssetLine cutover. Object class: Helvan TR-63 power transformer. Task: oil sampling for dissolved gas
      analysis, cycle 6 months. Follow-up rule carried over from Meridian: acetylene (C2H2) above 5 ppm
      creates a follow-up notification for a confirmatory re-sample within 7 days; repeated exceedance
      changes the cycle to 1 month. Moisture limit 20 ppm. Migration note: threshold fields were copied from
      the Meridian characteristic values and have not been reviewed against the current manual."""),
    D("en-tr40-otc", "Helvan TR-40 distribution transformer: tap changer service",
      "Northvale Grid Transformer Maintenance Manual, rev. 6, 2022",
      """The Helvan TR-40 (40 MVA, 66/11 kV) is fitted with a TC-9 on-load tap changer. Its diverter switch
      contacts shall be replaced after 80,000 operations or 7 years, whichever comes first, and the diverter
      oil shall be changed every 20,000 operations. The operation counter is read monthly by the depot and
      entered into AssetLine. TR-40 units at coastal sites are additionally inspected for breather silica
      gel saturation every 3 months. This section does not apply to the larger TR-63 family, whose tap
      changer is supplied by a different manufacturer."""),
    D("en-wt32-pitch", "Skerrin WT-3.2 wind turbine: pitch bearing lubrication",
      "Skerrin Wind Service Manual SM-32, chapter 9, edition 3 (2023)",
      """Each of the three pitch bearings on the Skerrin WT-3.2 turbine shall be regreased every 2,000
      operating hours using Lubrex PB-2 grease only. Apply 280 g per bearing through the six nipples in equal
      shares while cycling the blade slowly through 0 to 90 degrees of pitch. Collect purged grease from the
      drain ports and record its colour; dark grey or metallic grease is reported to the blade bearing
      specialist. The turbine must be in service mode with the rotor lock engaged before anyone enters the
      hub. Record the task in AssetLine under work type WT-PB-LUB."""),
    D("en-wt25-yaw", "Skerrin WT-2.5 wind turbine: yaw gear lubrication",
      "Skerrin Wind Service Manual SM-25, chapter 11, edition 5 (2019)",
      """The yaw ring gear of the Skerrin WT-2.5 turbine is lubricated by the automatic lubrication unit,
      which shall be refilled every 4,000 operating hours with Lubrex YG-1 open-gear grease (3.5 kg cartridge).
      During the annual service, visually inspect the ring gear teeth for pitting and check that each of the
      eight pinion outlets delivers grease. The pitch system of the WT-2.5 is hydraulic and has no greased
      pitch bearings; hydraulic accumulators are pre-charged to 90 bar and checked annually."""),
    D("en-loto", "Lockout-tagout for substation work",
      "Northvale Grid Safety Rules SR-12, 2021",
      """Before any maintenance on high-voltage apparatus, the authorised person shall isolate the equipment
      from all points of supply, apply personal padlocks to each isolation point, and attach a danger tag
      showing name, date and work order number. Earths are applied only after proving dead with an approved
      voltage indicator that has been tested before and after use. Keys are kept in the lockout box in the
      control building. The safety document is cancelled only when every person has signed off and removed
      their padlock. Deviations must be reported to the Safety Coordinator within 24 hours."""),
    D("en-vegetation", "Substation vegetation and perimeter management",
      "Northvale Grid Estates Procedure EP-04, 2022",
      """Vegetation inside substation fences shall be kept below 150 mm and no trees are permitted within 5 m
      of the perimeter fence. Herbicide application inside the fence is limited to two treatments per year
      and must use products from the approved list. Perimeter fences are inspected quarterly for damage,
      gaps under the fence line and climbing aids. Findings are logged in AssetLine under work type
      EST-PER. Contractors must attend the site induction before their first visit."""),
    D("en-vcb12-timing", "VCB-12 vacuum circuit breaker: timing test",
      "Northvale Grid Operations Manual, vol. 4, rev. 3, 2021",
      """Timing tests on VCB-12 33 kV vacuum circuit breakers are performed every 6 years or after 2,000
      operations. Using the breaker analyser, record opening time (limit 35 to 45 ms), closing time (limit 55
      to 70 ms) and pole discrepancy (maximum 3 ms). A vacuum integrity check with the 40 kV test set is made
      at the same visit. Breakers outside limits are removed from service and returned to the workshop. The
      test sheet is scanned and attached to the AssetLine work order."""),
    D("en-erp-codes", "Meridian to AssetLine work type mapping",
      "Northvale Grid ERP Transition Guide, version 1.2, January 2024",
      """From 1 March 2024 all maintenance work orders are raised in AssetLine. Meridian work types map as
      follows: GIS-INSP becomes GIS-DEN for gas density checks, TX-OIL becomes TX-DGA for transformer oil
      sampling, WT-LUB is split into WT-PB-LUB and WT-YAW-LUB, and SUB-VEG becomes EST-PER. Open Meridian
      orders were closed and recreated with a reference in the long text. Maintenance plans were migrated
      with their cycles and follow-up rules; planners are asked to review migrated thresholds before the end
      of 2024."""),
    D("en-spares", "Tarrow depot spare parts stock (extract)",
      "Tarrow Depot inventory report, week 18, 2024",
      """| Part | Used on | Stock | Reorder level |
|---|---|---|---|
| SF6 gas cylinder 10 kg (certified) | KX-40, KX-24 | 6 | 4 |
| KX-40 density monitor DM-7 | KX-40 | 2 | 1 |
| O-ring kit OK-145 | KX-40 | 14 | 10 |
| Lubrex PB-2 grease 400 g | WT-3.2 | 22 | 15 |
| Lubrex YG-1 cartridge 3.5 kg | WT-2.5 | 3 | 4 |
| DGA syringe set (500 ml) | TR-63, TR-40 | 30 | 20 |
| TC-9 diverter contact set | TR-40 | 1 | 1 |

Stock is counted every Friday. Items below the reorder level are ordered automatically by AssetLine;
emergency orders need approval from the depot manager.""", "markdown_table"),
)

ROLE_TECH = C("Answer as a senior maintenance engineer briefing field technicians.", "persona", "role",
              crit="Satisfied when the response reads as an engineer instructing technicians (practical, "
                   "procedural, addresses the crew); not satisfied if it is written as a generic encyclopedia "
                   "entry or as marketing text.")

INSTANCES = [
    inst("energy-noisy-01", DOM,
         "What is the SF6 density alarm setting for the KX-40 switchgear, how often must it be inspected, and "
         "what should the crew do when the first alarm stage is raised?",
         "noisy", "natural",
         [
             ROLE_TECH,
             C("Give the crew actions as a numbered list with at least 4 steps.", "output", "format",
               rule="enterprise:numbered_list", kw={"min_items": 4}),
             C("Keep the answer between 80 and 220 words.", "output", "content",
               rule="enterprise:word_count_range", kw={"min_words": 80, "max_words": 220}),
             C("Do not mention settings of other switchgear models; the question is about the KX-40 only.",
               "output", "negative",
               crit="Satisfied when the answer contains no values from the KX-24 or any other model (e.g. "
                    "0.40 MPa, 0.36 MPa, 24 months, torque values). Not satisfied if a non-KX-40 setting is "
                    "presented, even as a comparison."),
             cite_docs(1, 'Cite the document behind each setting with a bracketed reference like "[doc 2]".'),
             gap_phrase("The retrieved documents do not cover this; refer the question to Engineering."),
             conflict_both("the inspection interval or alarm settings"),
             no_emoji(),
         ],
         [use(P, "en-kx24-sf6", "noise"), use(P, "en-spares", "noise"), use(P, "en-loto", "noise"),
          use(P, "en-kx40-sf6", "supporting"), use(P, "en-vcb12-timing", "noise"),
          use(P, "en-erp-codes", "noise"), use(P, "en-tr63-dga", "noise"), use(P, "en-vegetation", "noise"),
          use(P, "en-wt32-pitch", "noise")],
         notes="Stage 1 alarm 0.52 MPa abs at 20 C (stage 2 blocking 0.48 MPa); inspect every 18 months and after "
               "faults/openings; steps: confirm with portable gauge, IR leak search, top up to 0.60 MPa, repeat "
               "reading within 14 days; two alarms in 12 months -> Switchgear Engineering. Must not use KX-24 values."),
    inst("energy-noisy-02", DOM,
         "For the Skerrin WT-3.2, how often are the pitch bearings regreased, with which grease and how much, "
         "and is there enough grease in stock at Tarrow depot for the next round on 5 turbines?",
         "noisy", "natural",
         [
             C("Write for a wind-farm planner who is not a mechanical specialist; explain any technical term "
               "you use.", "persona", "audience",
               crit="Satisfied when technical terms (e.g. regreasing, operating hours, purge) are explained or "
                    "avoided and the text is usable by a planner; not satisfied if it is dense specialist jargon "
                    "without explanation."),
             C("Show the stock calculation in a markdown table with at least 2 data rows.", "output", "format",
               rule="enterprise:markdown_table", kw={"min_rows": 2}),
             C('Start the answer with "Summary:".', "output", "content",
               rule="enterprise:starts_with", kw={"prefix": "Summary:"}),
             C("Show the arithmetic for the grease quantity explicitly (bearings x grams x turbines).",
               "knowledge_protocol", "evidence_chaining",
               crit="Satisfied when the response combines the per-bearing quantity (280 g), the number of "
                    "bearings per turbine (3) and the number of turbines (5) into a total (4,200 g) and "
                    "relates it to the stock figure from the depot table (22 x 400 g = 8,800 g). Not satisfied "
                    "if it gives a verdict without showing how the numbers combine."),
             cite_docs(2),
             gap_phrase("The retrieved documents do not cover this; refer the question to Engineering.",
                        lead="If any figure needed for the answer is missing from the documents"),
             conflict_both("grease type, quantity or interval"),
             hedge(["guaranteed", "certainly", "always"]),
         ],
         [use(P, "en-wt25-yaw", "noise"), use(P, "en-erp-codes", "noise"), use(P, "en-loto", "noise"),
          use(P, "en-kx40-sf6", "noise"), use(P, "en-vegetation", "noise"), use(P, "en-tr40-otc", "noise"),
          use(P, "en-vcb12-timing", "noise"), use(P, "en-spares", "partial"), use(P, "en-wt32-pitch", "supporting")],
         notes="Every 2,000 operating hours, Lubrex PB-2 only, 280 g per bearing, 3 bearings per turbine -> 840 g per "
               "turbine, 4,200 g (about 11 tins of 400 g) for 5 turbines; Tarrow holds 22 tins = 8,800 g, so stock "
               "suffices, though it drops below the reorder level of 15 tins (AssetLine reorders automatically). "
               "Must not use WT-2.5 yaw grease YG-1."),
    inst("energy-gap-01", DOM,
         "After topping up SF6 on a KX-40 bay, to what torque should the busbar bolted joints be retightened?",
         "gap", "augmented",
         [
             ROLE_TECH,
             gap_phrase("The retrieved documents do not cover this; refer the question to Engineering."),
             C("Do not transfer values from other equipment families to the KX-40.", "knowledge_protocol",
               "source_filtering",
               crit="Satisfied when the response does not present the KX-24 torques (70 Nm / 150 Nm) or any "
                    "other model's values as applicable to the KX-40. Mentioning that a KX-24 value exists is "
                    "acceptable only if it is clearly stated not to apply. Not satisfied if a torque value is "
                    "offered for the KX-40."),
             cite_docs(1, 'Reference the documents you checked with bracketed references like "[doc 1]".'),
             conflict_both("the torque or procedure"),
             C("Use at most 120 words.", "output", "content",
               rule="length_constraints:number_words", kw={"num_words": 120, "relation": "less than"}),
             no_emoji(),
         ],
         [use(P, "en-kx40-sf6", "partial"), use(P, "en-kx24-sf6", "noise"), use(P, "en-spares", "noise"),
          use(P, "en-loto", "noise"), use(P, "en-erp-codes", "noise"), use(P, "en-vcb12-timing", "noise"),
          use(P, "en-kx40-bulletin", "noise")]),
    inst("energy-gap-02", DOM,
         "When do the diverter switch contacts of the on-load tap changer on a Helvan TR-63 transformer have "
         "to be replaced?",
         "gap", "augmented",
         [
             C("You are the transformer asset manager answering a depot supervisor.", "persona", "role",
               crit="Satisfied when the tone is that of an asset manager advising a supervisor (decisive about "
                    "next steps, operational). Not satisfied if it is chatty or addressed to a consumer."),
             C("Structure the answer with markdown headings, at least 2 sections.", "output", "format",
               rule="enterprise:section_count", kw={"min_sections": 2}),
             gap_phrase("The retrieved documents do not cover this; refer the question to Engineering."),
             C("Treat the TR-40 manual section as not applicable to TR-63 units.", "knowledge_protocol",
               "source_filtering",
               crit="Satisfied when the response does not give 80,000 operations / 7 years (TR-40 values) as "
                    "the TR-63 answer. Not satisfied if TR-40 values are presented as applying to the TR-63."),
             conflict_both("replacement criteria"),
             cite_docs(1),
             hedge(["definitely", "must be", "always"]),
         ],
         [use(P, "en-tr40-otc", "noise"), use(P, "en-tr63-dga", "partial"), use(P, "en-spares", "noise"),
          use(P, "en-erp-codes", "noise"), use(P, "en-vcb12-timing", "noise"), use(P, "en-loto", "noise"),
          use(P, "en-tr63-migrated", "partial")]),
    inst("energy-conflict-01", DOM,
         "How often does the SF6 density of KX-40 switchgear compartments need to be inspected, and at what "
         "pressure does the first alarm stage operate?",
         "conflict", "augmented",
         [
             ROLE_TECH,
             conflict_both("the inspection interval"),
             C("Present the settings in a markdown table (parameter, value, source) with at least 2 rows.",
               "output", "format", rule="enterprise:markdown_table", kw={"min_rows": 2}),
             cite_docs(2),
             C("Mention the issue date of any bulletin you rely on so the crew can judge how current it is.",
               "knowledge_protocol", "evidence_chaining",
               crit="Satisfied when the response states the bulletin's date (July 2024 / effective 1 August "
                    "2024) or the manual revision year alongside the values. Not satisfied if neither date "
                    "nor revision appears."),
             gap_phrase("The retrieved documents do not cover this; refer the question to Engineering."),
             C("Keep it under 180 words.", "output", "content",
               rule="enterprise:word_count_range", kw={"min_words": 30, "max_words": 180}),
             no_emoji(),
         ],
         [use(P, "en-loto", "noise"),
          use(P, "en-kx40-sf6", "supporting", "g1",
              "KX-40 SF6 inspection interval: 18 months (Operations Manual rev. 4) vs 12 months (Field Bulletin FB-2024-07)"),
          use(P, "en-kx24-sf6", "noise"), use(P, "en-erp-codes", "noise"), use(P, "en-vcb12-timing", "noise"),
          use(P, "en-kx40-bulletin", "conflicting", "g1",
              "KX-40 SF6 inspection interval: 18 months (Operations Manual rev. 4) vs 12 months (Field Bulletin FB-2024-07)"),
          use(P, "en-spares", "noise")],
         notes="Manual rev. 4 says 18 months, Field Bulletin FB-2024-07 (9 July 2024, effective 1 Aug 2024) says "
               "12 months; both agree stage 1 = 0.52 MPa abs at 20 C (stage 2 0.48 MPa). Both values must be "
               "reported with sources."),
    inst("energy-conflict-02", DOM,
         "At what acetylene level in the DGA results does a Helvan TR-63 need a confirmatory re-sample, and "
         "how quickly?",
         "conflict", "natural",
         [
             C("Write for the control-room duty engineer who reads DGA reports at night.", "persona", "audience",
               crit="Satisfied when the answer is concise, action-oriented and usable at a glance by an "
                    "on-duty engineer. Not satisfied if it is a long background essay."),
             conflict_both("the acetylene threshold"),
             C("If one value comes from an unreviewed ERP migration, say so; do not present migrated ERP "
               "data as more authoritative than the manual.", "knowledge_protocol", "source_filtering",
               crit="Satisfied when the response notes that the 5 ppm value is from a migrated Meridian/"
                    "AssetLine record flagged as unreviewed, without declaring it authoritative. Not satisfied "
                    "if the ERP value is adopted as the answer or the provenance is ignored."),
             C("Use a bullet list with at least 3 items.", "output", "format",
               rule="enterprise:bullet_list", kw={"min_items": 3}),
             cite_docs(2),
             gap_phrase("The retrieved documents do not cover this; refer the question to Engineering."),
             hedge(["definitely", "guaranteed"]),
             C('End with the line "Verify against the current manual before acting."', "output", "content",
               rule="enterprise:ends_with", kw={"suffix": "Verify against the current manual before acting."}),
         ],
         [use(P, "en-erp-codes", "noise"),
          use(P, "en-tr63-migrated", "conflicting", "g1",
              "TR-63 acetylene re-sample trigger: 2 ppm (Transformer Maintenance Manual rev. 6) vs 5 ppm (migrated AssetLine plan MP-TR63-DGA)"),
          use(P, "en-tr40-otc", "noise"), use(P, "en-spares", "noise"), use(P, "en-vcb12-timing", "noise"),
          use(P, "en-tr63-dga", "supporting", "g1",
              "TR-63 acetylene re-sample trigger: 2 ppm (Transformer Maintenance Manual rev. 6) vs 5 ppm (migrated AssetLine plan MP-TR63-DGA)"),
          use(P, "en-loto", "noise"), use(P, "en-vegetation", "noise")],
         notes="Manual rev. 6: C2H2 > 2 ppm -> re-sample within 7 days; migrated ERP plan: > 5 ppm, also within 7 "
               "days; both agree on 7 days and monthly sampling after repeated exceedance."),
]
