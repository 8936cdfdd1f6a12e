"""Medical domain: St Aldric Regional Hospital (fictional); all drugs and patients are invented."""

from _kit import C, D, cite_docs, conflict_both, gap_phrase, hedge, inst, no_emoji, use

DOM = "Medical"
P = {}


def _add(*docs):
    for d in docs:
        P[d["doc_id"]] = d


_add(
    D("md-velan-adult", "Velantrocin in adult community-acquired pneumonia",
      "St Aldric Antimicrobial Guideline AG-14, version 3.1, approved May 2023",
      """Velantrocin is reserved for adults with severe community-acquired pneumonia when first-line therapy is
      contraindicated. Standard dose: 750 mg IV every 12 hours, infused over 60 minutes. Renal adjustment:
      creatinine clearance 30 to 50 ml/min, give 750 mg every 24 hours; below 30 ml/min, velantrocin is not
      recommended and the infectious diseases team should be consulted. Therapeutic drug monitoring: take a
      trough level immediately before the fourth dose; target trough 8 to 12 mg/L. If the trough exceeds
      15 mg/L, withhold the next dose and repeat the level. Review the indication daily; usual course 7 days."""),
    D("md-velan-news", "Pharmacy Bulletin: velantrocin monitoring update",
      "St Aldric Pharmacy Bulletin no. 52, February 2024",
      """Ward pharmacists report frequent sub-therapeutic velantrocin levels in patients with severe pneumonia.
      After discussion at the antimicrobial stewardship meeting in January, the pharmacy team recommends a
      target trough of 10 to 15 mg/L, sampled immediately before the fourth dose. Levels above 18 mg/L should
      prompt withholding of the next dose. The bulletin summarises committee discussion; the Antimicrobial
      Guideline AG-14 has not been updated yet and remains the approved document. Questions can be sent to the
      antimicrobial pharmacist on extension 4417."""),
    D("md-velan-paeds", "Velantrocin in children (over 3 months)",
      "St Aldric Paediatric Formulary, section 5.1, 2022",
      """In children over 3 months of age, velantrocin is used only on the advice of the paediatric infectious
      diseases consultant. The dose is 15 mg/kg IV every 12 hours (maximum 750 mg per dose), infused over 60
      minutes. Trough monitoring before the third dose is recommended, with a target of 5 to 10 mg/L. Not for
      use in neonates. Renal impairment in children requires individual dosing by the paediatric pharmacist.
      Reconstitute with water for injection and dilute in sodium chloride 0.9 percent."""),
    D("md-tevanocin", "Tevanocin: administration and compatibility",
      "St Aldric Injectable Medicines Guide, monograph T-08, 2023",
      """Tevanocin 1 g vials are reconstituted with 20 ml water for injection and diluted in 100 ml sodium
      chloride 0.9 percent. Infuse over 30 minutes. Y-site compatibility: tevanocin is compatible with heparin
      sodium and potassium chloride infusions, and incompatible with amiodarone and furosemide. Flush the line
      with 10 ml sodium chloride 0.9 percent before and after administration. Tevanocin is a different agent
      from velantrocin and the two are not interchangeable."""),
    D("md-fero-ortho", "Ferolaxin for VTE prophylaxis after joint replacement",
      "St Aldric Orthopaedic VTE Protocol OP-7, version 2, 2023",
      """Adults undergoing elective hip or knee arthroplasty receive ferolaxin 40 mg subcutaneously once daily.
      The first dose is given 12 hours after wound closure provided haemostasis is secure. Duration: total hip
      arthroplasty 28 days; total knee arthroplasty 14 days. If creatinine clearance is below 30 ml/min, reduce
      to 20 mg once daily. Check platelet count on day 5. Patients are taught self-injection before discharge.
      Dosing for patients at extremes of body weight is outside the scope of this protocol."""),
    D("md-fero-card", "Ortho ward quick reference card: VTE prophylaxis",
      "Ward 6B laminated quick reference card, printed 2021",
      """Ferolaxin after joint replacement: 40 mg SC once daily, start 12 h post-op. Hip replacement: continue
      for 35 days. Knee replacement: continue for 14 days. CrCl under 30: 20 mg daily. Day-5 platelets. Teach
      self-injection and give sharps bin at discharge. Mechanical prophylaxis (stockings) for all patients unless
      contraindicated. Card owner: Ward 6B practice educator. Check the intranet for the current protocol."""),
    D("md-fero-medical", "Ferolaxin for acutely ill medical inpatients",
      "St Aldric Medical VTE Guideline MG-3, 2022",
      """Acutely ill medical inpatients with reduced mobility and at least one additional risk factor receive
      ferolaxin 40 mg subcutaneously once daily for the duration of admission, usually 6 to 14 days. Do not
      give within 12 hours of a lumbar puncture or neuraxial procedure. Contraindications include active
      bleeding, platelets below 50 x 10^9/L and known heparin-induced thrombocytopenia. Risk assessment must be
      repeated within 24 hours of admission and whenever the clinical condition changes."""),
    D("md-bariatric", "Bariatric surgery nutrition pathway",
      "St Aldric Bariatric Service Pathway BS-2, 2024",
      """After sleeve gastrectomy or gastric bypass, patients progress through four dietary stages: clear
      fluids on day 1, full fluids for two weeks, pureed food for two weeks, then soft food. A chewable
      multivitamin is taken daily for life, with vitamin B12 injections every three months after bypass.
      The bariatric dietitian reviews the patient at 2, 6 and 12 weeks. Protein intake target is at least
      60 g per day. Patients should avoid carbonated drinks and drinking with meals."""),
    D("md-discharge-marrow", "Discharge summary: Ilse Marrow (fictional record)",
      "St Aldric electronic patient record, Ward 4A discharge summary, 12 March 2024",
      """Patient: Ilse Marrow, 71. Admitted 5 March 2024 with an exacerbation of heart failure. Discharged
      12 March 2024. Medication changes: furosemide increased from 40 mg to 80 mg each morning; spironolactone
      25 mg once daily started; ramipril reduced from 10 mg to 5 mg daily because of a rise in creatinine;
      naproxen stopped (may worsen fluid retention); paracetamol 1 g up to four times daily as needed added.
      Unchanged: bisoprolol 5 mg daily. Follow-up: blood tests (renal function, potassium) at the GP practice
      in 7 days; heart failure nurse telephone review in 2 weeks; daily weights, report a gain of 2 kg in 3
      days."""),
    D("md-hand-hygiene", "Hand hygiene audit results, quarter 4",
      "St Aldric Infection Prevention Team report, January 2024",
      """Compliance with the five moments for hand hygiene was 91 percent across inpatient wards in quarter 4,
      up from 87 percent. Ward 4A scored 94 percent and Ward 6B 89 percent. Missed opportunities were most
      common after touching patient surroundings. Alcohol gel dispensers were empty at 3 percent of spot
      checks. Each ward will nominate a hand hygiene champion and repeat audits monthly until compliance
      exceeds 95 percent for three consecutive months."""),
    D("md-sepsis", "Adult sepsis bundle: first hour",
      "St Aldric Emergency Department Protocol ED-11, 2023",
      """For adults with suspected sepsis and a raised early warning score, complete the bundle within one hour:
      take blood cultures before antibiotics, measure lactate, give intravenous antibiotics according to the
      suspected source, start fluid resuscitation with 500 ml crystalloid boluses if hypotensive or lactate above
      4 mmol/L, and monitor urine output hourly. Senior review is required within 30 minutes. Record the time
      of each element on the sepsis screening form."""),
    D("md-formulary", "Restricted antimicrobials formulary (extract)",
      "St Aldric Drug and Therapeutics Committee formulary, 2024 edition",
      """| Agent | Restriction | Approval needed from | Cost per day (ward budget units) |
|---|---|---|---|
| Velantrocin IV | Severe CAP, first-line contraindicated | Microbiology or ID consultant | 48 |
| Tevanocin IV | Resistant gram-positive infection | ID consultant | 62 |
| Corlamycin oral | Step-down therapy | None | 6 |
| Ravoxin IV | Intra-abdominal sepsis | Microbiology | 35 |

Restricted agents dispensed without approval are supplied for 24 hours only, pending review by the
antimicrobial pharmacist.""", "markdown_table"),
    D("md-portal", "Patient portal help page: your discharge letter",
      "St Aldric patient portal (portal.staldric.example), help page, retrieved 2024",
      """<h2>Your discharge letter</h2>
<p>When you leave hospital, your discharge letter appears in the portal within 48 hours. It lists your
diagnosis, any changes to your medicines and your follow-up appointments.</p>
<ul>
<li>Tap <b>Letters</b> to open the letter as a PDF.</li>
<li>Your GP practice receives a copy automatically.</li>
<li>If a medicine change is unclear, contact the ward pharmacist using the number on the letter.</li>
</ul>
<p><a href="#" onclick="trackClick('discharge_help'); return false;">Was this page helpful?</a></p>
<script>function trackClick(id){ /* analytics beacon */ }</script>""", "html"),
)

CLIN_ROLE = C("You are a clinical pharmacist answering a question from a ward doctor.", "persona", "role",
              crit="Satisfied when the response sounds like a pharmacist advising a prescriber: precise "
                   "doses, units and monitoring, professional register. Not satisfied if it addresses a patient "
                   "or uses lay, chatty language.")
MD_GAP = "This information is not available in the provided documents; please contact the on-call pharmacist."

INSTANCES = [
    inst("medical-noisy-01", DOM,
         "My patient has severe community-acquired pneumonia, penicillin anaphylaxis and a creatinine clearance "
         "of 40 ml/min. What velantrocin dose should I prescribe and how do I monitor it?",
         "noisy", "natural",
         [
             CLIN_ROLE,
             C("Begin with a one-line dosing recommendation, then give the monitoring plan.", "output", "ordering",
               crit="Satisfied when the first sentence/line states the adjusted dose (750 mg IV every 24 hours) "
                    "and the monitoring details follow afterwards. Not satisfied if the dose appears only after "
                    "background or monitoring details."),
             C("Use a numbered list with at least 3 items for the monitoring plan.", "output", "format",
               rule="enterprise:numbered_list", kw={"min_items": 3}),
             C("Keep the answer between 60 and 200 words.", "output", "content",
               rule="enterprise:word_count_range", kw={"min_words": 60, "max_words": 200}),
             C("Use only adult guidance; ignore paediatric dosing documents.", "knowledge_protocol",
               "source_filtering",
               crit="Satisfied when no paediatric values (15 mg/kg, trough before third dose, 5-10 mg/L) are "
                    "used. Not satisfied if any paediatric figure is presented as applicable."),
             cite_docs(1, 'Cite the guideline for every dose or target with a bracketed reference like "[doc 1]".'),
             gap_phrase(MD_GAP),
             conflict_both("dose or monitoring targets"),
             no_emoji(),
         ],
         [use(P, "md-velan-adult", "supporting"), use(P, "md-velan-paeds", "noise"), use(P, "md-tevanocin", "noise"),
          use(P, "md-formulary", "partial"), use(P, "md-sepsis", "noise"), use(P, "md-hand-hygiene", "noise"),
          use(P, "md-fero-medical", "noise"), use(P, "md-portal", "noise"), use(P, "md-bariatric", "noise")],
         notes="CrCl 30-50 -> 750 mg IV every 24 h, infused over 60 min; trough before 4th dose, target 8-12 mg/L; "
               "withhold and repeat if >15 mg/L; daily review, usual 7 days; restricted agent needing "
               "microbiology/ID approval (formulary)."),
    inst("medical-noisy-02", DOM,
         "Summarise the medication changes made at discharge for Ilse Marrow and what follow-up she needs.",
         "noisy", "natural",
         [
             C("Write for the patient's GP, who will continue her care.", "persona", "audience",
               crit="Satisfied when the summary is aimed at a general practitioner (clinical terms acceptable, "
                    "focused on what the GP must continue, monitor or arrange). Not satisfied if written for the "
                    "patient or for hospital staff."),
             C('Use markdown headings including "Started", "Changed", "Stopped" and "Follow-up" (at least 4 '
               "sections).", "output", "format", rule="enterprise:section_count", kw={"min_sections": 4}),
             C("Do not include any medicine that was unchanged except to note it as unchanged in one line.",
               "output", "negative",
               crit="Satisfied when bisoprolol is at most mentioned once as unchanged and not listed under "
                    "started/changed/stopped. Not satisfied if unchanged medicines are presented as changes."),
             C("State the reason for each change where the record gives one.", "output", "content",
               crit="Satisfied when the ramipril reduction is linked to the creatinine rise and stopping naproxen "
                    "to fluid retention. Not satisfied if either available reason is omitted or reasons are "
                    "invented for changes the record does not explain."),
             cite_docs(1),
             gap_phrase(MD_GAP),
             conflict_both("any dose"),
             hedge(["definitely", "guaranteed"]),
         ],
         [use(P, "md-portal", "noise"), use(P, "md-hand-hygiene", "noise"), use(P, "md-fero-medical", "noise"),
          use(P, "md-sepsis", "noise"), use(P, "md-discharge-marrow", "supporting"),
          use(P, "md-formulary", "noise"), use(P, "md-bariatric", "noise"), use(P, "md-fero-card", "noise"),
          use(P, "md-velan-adult", "noise"), use(P, "md-tevanocin", "noise")],
         notes="Started spironolactone 25 mg daily and paracetamol 1 g up to QDS PRN; changed furosemide 40->80 mg "
               "mane, ramipril 10->5 mg (creatinine rise); stopped naproxen (fluid retention); bisoprolol "
               "unchanged; bloods (renal, K) at GP in 7 days, HF nurse call at 2 weeks, daily weights (2 kg/3 days)."),
    inst("medical-gap-01", DOM,
         "Can velantrocin be run through the same line as a heparin infusion (Y-site), or do we need a "
         "separate cannula?",
         "gap", "augmented",
         [
             CLIN_ROLE,
             gap_phrase(MD_GAP),
             C("Do not apply compatibility data for other antibiotics to velantrocin.", "knowledge_protocol",
               "source_filtering",
               crit="Satisfied when the response does not claim velantrocin is compatible or incompatible with "
                    "heparin on the basis of the tevanocin monograph. Not satisfied if tevanocin data is "
                    "transferred to velantrocin."),
             C("Suggest a safe interim action the nurse can take while the question is resolved.", "output",
               "content",
               crit="Satisfied when the response offers a conservative interim step (e.g. use a separate line or "
                    "lumen, or pause and flush, pending pharmacist advice) framed as a precaution, not as a "
                    "documented compatibility fact. Not satisfied if no interim step is given or if it is "
                    "presented as established by the documents."),
             cite_docs(1, 'Refer to the documents you checked with bracketed references like "[doc 2]".'),
             conflict_both("compatibility"),
             C("Stay under 150 words.", "output", "content",
               rule="length_constraints:number_words", kw={"num_words": 150, "relation": "less than"}),
             no_emoji(),
         ],
         [use(P, "md-tevanocin", "noise"), use(P, "md-velan-adult", "partial"), use(P, "md-velan-paeds", "partial"),
          use(P, "md-formulary", "noise"), use(P, "md-sepsis", "noise"), use(P, "md-fero-medical", "noise"),
          use(P, "md-velan-news", "noise")]),
    inst("medical-gap-02", DOM,
         "What ferolaxin dose should a 162 kg patient receive for VTE prophylaxis after total knee "
         "replacement?",
         "gap", "natural",
         [
             CLIN_ROLE,
             C("Address the answer to the orthopaedic registrar by role in the first line.", "persona", "audience",
               crit="Satisfied when the opening line addresses the registrar (e.g. 'For the orthopaedic "
                    "registrar:' or similar). Not satisfied otherwise."),
             gap_phrase(MD_GAP),
             C("Do not extrapolate a weight-adjusted dose from the standard dose.", "knowledge_protocol",
               "uncertainty",
               crit="Satisfied when no specific weight-based dose (e.g. 60 mg, 40 mg twice daily, 0.5 mg/kg) is "
                    "proposed. Restating that the standard protocol dose is 40 mg and that weight extremes are out "
                    "of its scope is acceptable. Not satisfied if the answer recommends a dose for 162 kg."),
             C("Use a bullet list with at least 2 items.", "output", "format",
               rule="enterprise:bullet_list", kw={"min_items": 2}),
             cite_docs(1),
             conflict_both("dose or duration"),
             hedge(["definitely", "must", "safe to"]),
         ],
         [use(P, "md-fero-ortho", "partial"), use(P, "md-bariatric", "noise"), use(P, "md-fero-medical", "noise"),
          use(P, "md-hand-hygiene", "noise"), use(P, "md-portal", "noise"), use(P, "md-fero-card", "partial"),
          use(P, "md-sepsis", "noise")]),
    inst("medical-conflict-01", DOM,
         "What trough level should we aim for with velantrocin, and when should the level be taken?",
         "conflict", "augmented",
         [
             CLIN_ROLE,
             conflict_both("the target trough range"),
             C("Say which document is the approved guideline and which is a bulletin, without choosing a winner.",
               "knowledge_protocol", "source_filtering",
               crit="Satisfied when the response notes that AG-14 is the approved guideline and the Pharmacy "
                    "Bulletin summarises a committee recommendation, while still presenting both ranges. Not "
                    "satisfied if provenance is not mentioned or one range is dropped."),
             C("Present the two positions in a markdown table with at least 2 rows.", "output", "format",
               rule="enterprise:markdown_table", kw={"min_rows": 2}),
             cite_docs(2),
             gap_phrase(MD_GAP),
             C('Use the word "trough" at least 2 times.', "output", "content",
               rule="enterprise:keyword_frequency", kw={"keyword": "trough", "min_count": 2, "max_count": 12}),
             no_emoji(),
             hedge(["definitely", "clearly correct"]),
         ],
         [use(P, "md-velan-paeds", "noise"),
          use(P, "md-velan-news", "conflicting", "g1",
              "Velantrocin target trough: 8-12 mg/L (Guideline AG-14 v3.1) vs 10-15 mg/L (Pharmacy Bulletin no. 52)"),
          use(P, "md-formulary", "noise"), use(P, "md-tevanocin", "noise"), use(P, "md-sepsis", "noise"),
          use(P, "md-velan-adult", "supporting", "g1",
              "Velantrocin target trough: 8-12 mg/L (Guideline AG-14 v3.1) vs 10-15 mg/L (Pharmacy Bulletin no. 52)"),
          use(P, "md-hand-hygiene", "noise")],
         notes="AG-14: 8-12 mg/L, withhold above 15; Bulletin 52: 10-15 mg/L, withhold above 18 (not yet adopted in "
               "AG-14). Both agree: sample immediately before the 4th dose."),
    inst("medical-conflict-02", DOM,
         "How long should ferolaxin prophylaxis continue after a total hip replacement?",
         "conflict", "natural",
         [
             C("Answer as the orthopaedic ward's practice educator.", "persona", "role",
               crit="Satisfied when the voice is that of a clinical educator explaining practice to ward staff. "
                    "Not satisfied if written as a patient leaflet."),
             C("Write for newly qualified nurses on the ward.", "persona", "audience",
               crit="Satisfied when the explanation is clear for junior nurses (defines abbreviations like SC or "
                    "VTE, gives practical points). Not satisfied if it assumes specialist knowledge throughout."),
             conflict_both("the duration for hip replacement"),
             cite_docs(2),
             C("Keep it to 2 or 3 paragraphs.", "output", "format",
               rule="enterprise:paragraph_count_range", kw={"min_paragraphs": 2, "max_paragraphs": 3}),
             gap_phrase(MD_GAP),
             C('End with "Check the intranet protocol before discharge."', "output", "content",
               rule="enterprise:ends_with", kw={"suffix": "Check the intranet protocol before discharge."}),
             no_emoji(),
         ],
         [use(P, "md-fero-card", "conflicting", "g1",
              "Ferolaxin duration after hip arthroplasty: 28 days (Protocol OP-7 v2, 2023) vs 35 days (Ward 6B card, 2021)"),
          use(P, "md-fero-medical", "noise"), use(P, "md-bariatric", "noise"), use(P, "md-discharge-marrow", "noise"),
          use(P, "md-fero-ortho", "supporting", "g1",
              "Ferolaxin duration after hip arthroplasty: 28 days (Protocol OP-7 v2, 2023) vs 35 days (Ward 6B card, 2021)"),
          use(P, "md-hand-hygiene", "noise"), use(P, "md-portal", "noise")],
         notes="OP-7 (2023): 28 days; ward card (printed 2021): 35 days. Both: 40 mg SC daily from 12 h post-op, "
               "knee 14 days, 20 mg if CrCl<30."),
]
