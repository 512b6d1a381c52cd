"""Seedable generator of synthetic English clinical notes (discharge summaries, nursing notes,
clinic letters) carrying Faker surrogates of every i2b2 2014 PHI type with exact spans.

Notes are assembled piece by piece from templates; a PHI piece becomes a `Span` at the offset
where it is appended, so offsets never come from searching the finished text."""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable, Iterator, Sequence
from datetime import date, timedelta
from typing import NamedTuple

from faker import Faker

from deidpool.corpus.document import Document, Span

KINDS = ("discharge", "nursing", "letter")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")

# ---------------------------------------------------------------------------------------------
# Surrogate vocabularies

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_MON = ("Jan", "Feb", "Mar", "Apr", "May", "June", "July", "Aug", "Sept", "Oct", "Nov", "Dec")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_HOLIDAYS = ("Christmas", "Thanksgiving", "New Year's Day", "Easter", "Labor Day", "Memorial Day")

_DATES_WITH_YEAR: tuple[Callable[[date], str], ...] = (
    lambda d: f"{d.month:02d}/{d.day:02d}/{d.year}",
    lambda d: f"{d.month}/{d.day}/{d.year}",
    lambda d: f"{d.month}/{d.day}/{d.year % 100:02d}",
    lambda d: d.isoformat(),
    lambda d: f"{d.month:02d}-{d.day:02d}-{d.year}",
    lambda d: f"{_MONTHS[d.month - 1]} {d.day}, {d.year}",
    lambda d: f"{d.day} {_MONTHS[d.month - 1]} {d.year}",
    lambda d: f"{d.day:02d}-{_MONTHS[d.month - 1][:3].upper()}-{d.year}",
)
_DATES_WITHOUT_YEAR: tuple[Callable[[date], str], ...] = (
    lambda d: f"{d.month}/{d.day}",
    lambda d: f"{d.month:02d}/{d.day:02d}",
    lambda d: f"{_MON[d.month - 1]} {d.day}",
    lambda d: f"{_MONTHS[d.month - 1]} {d.day}",
    lambda d: f"{_MONTHS[d.month - 1]} {d.year}",
    lambda d: _WEEKDAYS[d.weekday()],
)

_SAINTS = ("Mary", "Joseph", "Luke", "Vincent", "Elizabeth", "Francis", "Anne", "Jude", "Michael",
           "Catherine", "Agnes", "Raphael")
_CITIES = ("Springfield", "Fairview", "Riverside", "Franklin", "Greenville", "Bristol", "Clinton",
           "Salem", "Madison", "Georgetown", "Arlington", "Ashland", "Burlington", "Dover", "Milton",
           "Newport", "Oxford", "Quincy", "Winchester", "Lexington")
_COUNTRIES = ("Haiti", "Ireland", "Italy", "Vietnam", "China", "India", "Mexico", "Brazil",
              "Portugal", "Cape Verde", "Greece", "Poland", "Russia", "Jamaica", "Dominican Republic",
              "Guatemala", "Nigeria", "Korea", "Philippines", "Canada", "Germany", "Lebanon",
              "Ethiopia", "El Salvador", "Somalia", "Cambodia")
_DEPARTMENTS = ("Cardiology", "Cardiac Surgery", "Neurology", "Neurosurgery", "Hematology/Oncology",
                "Oncology", "Emergency Department", "Medical Intensive Care Unit", "MICU", "CCU",
                "SICU", "Orthopedics", "General Medicine", "Internal Medicine", "Gastroenterology",
                "Pulmonary Medicine", "Nephrology", "Endocrinology", "Infectious Disease",
                "Physical Therapy", "Radiology", "Social Work", "Psychiatry", "Urology",
                "Rheumatology", "Geriatrics", "Vascular Surgery", "Cardiac Catheterization Lab",
                "Dialysis Unit", "Diabetes Center", "Heart Failure Clinic", "Anticoagulation Clinic",
                "Pain Management")
_PROFESSIONS = ("electrician", "teacher", "nurse", "accountant", "truck driver", "lawyer",
                "construction worker", "engineer", "cashier", "chef", "mechanic", "librarian",
                "plumber", "farmer", "firefighter", "police officer", "software engineer",
                "bus driver", "carpenter", "postal worker", "secretary", "pharmacist",
                "real estate agent", "hairdresser", "professor", "bank teller", "landscaper",
                "custodian", "waitress", "musician", "home health aide", "machinist", "fisherman")
_PETS = ("Buddy", "Max", "Bella", "Lucky", "Princess", "Rocky", "Daisy", "Charlie", "Molly", "Shadow")
_DEVICE_MAKERS = ("Medtronic", "Boston Scientific", "St. Jude", "Abbott", "Biotronik")

# ---------------------------------------------------------------------------------------------
# Clinical filler without PHI

_MEDS = (  # drug, doses, unit, route group
    ("metoprolol", (12.5, 25, 50, 100), "mg", "po"), ("lisinopril", (5, 10, 20, 40), "mg", "po"),
    ("atorvastatin", (10, 20, 40, 80), "mg", "po"), ("aspirin", (81, 325), "mg", "po"),
    ("Lasix", (20, 40, 80), "mg", "iv"), ("furosemide", (20, 40), "mg", "po"), ("Coumadin", (1, 2.5, 5), "mg", "po"),
    ("warfarin", (2, 5, 7.5), "mg", "po"), ("insulin glargine", (10, 18, 24, 32), "units", "sc"),
    ("metformin", (500, 850, 1000), "mg", "po"), ("amlodipine", (5, 10), "mg", "po"),
    ("omeprazole", (20, 40), "mg", "po"), ("pantoprazole", (40,), "mg", "iv"), ("heparin", (5000,), "units", "sc"),
    ("enoxaparin", (40, 60, 80), "mg", "sc"), ("levothyroxine", (25, 50, 88, 112), "mcg", "po"),
    ("gabapentin", (100, 300), "mg", "po"), ("sertraline", (50, 100), "mg", "po"),
    ("acetaminophen", (325, 650, 1000), "mg", "po"), ("oxycodone", (5, 10), "mg", "po"),
    ("senna", (8.6, 17.2), "mg", "po"), ("Colace", (100,), "mg", "po"), ("vancomycin", (1, 1.25), "g", "iv"),
    ("ceftriaxone", (1, 2), "g", "iv"), ("prednisone", (5, 10, 20, 40), "mg", "po"),
    ("digoxin", (0.125, 0.25), "mg", "po"), ("diltiazem", (30, 60, 120), "mg", "po"),
    ("tamsulosin", (0.4,), "mg", "po"), ("allopurinol", (100, 300), "mg", "po"),
    ("potassium chloride", (10, 20, 40), "mEq", "po"), ("Plavix", (75,), "mg", "po"),
    ("apixaban", (2.5, 5), "mg", "po"), ("hydrochlorothiazide", (12.5, 25), "mg", "po"),
    ("spironolactone", (25, 50), "mg", "po"), ("carvedilol", (3.125, 6.25, 12.5, 25), "mg", "po"),
)
_ROUTES = {"po": ("p.o.", "PO", "po", "by mouth"), "iv": ("IV", "i.v."), "sc": ("subcutaneously", "SC", "subcut")}
_FREQUENCIES = ("b.i.d.", "BID", "daily", "q.d.", "QD", "t.i.d.", "TID", "q.h.s.", "at bedtime",
                "q.6h.", "q8h", "q.a.m.", "once daily", "q.4-6h. p.r.n. pain", "p.r.n.", "weekly")
_LABS = (("Na", 128, 146, 0), ("K", 3.0, 5.9, 1), ("Cl", 95, 110, 0), ("HCO3", 16, 32, 0),
         ("BUN", 7, 80, 0), ("Cr", 0.6, 4.5, 1), ("Glu", 70, 380, 0), ("WBC", 3.1, 22.0, 1),
         ("Hct", 22.0, 48.0, 1), ("Hgb", 7.0, 16.0, 1), ("Plt", 60, 450, 0), ("INR", 0.9, 4.5, 1),
         ("PTT", 24.0, 110.0, 1), ("trop", 0.01, 2.5, 2), ("BNP", 40, 3200, 0),
         ("lactate", 0.6, 6.0, 1), ("ALT", 8, 240, 0), ("AST", 10, 300, 0), ("Mg", 1.2, 2.8, 1),
         ("TSH", 0.2, 9.0, 1), ("HbA1c", 5.2, 12.5, 1))
_PROBLEMS = ("CHF exacerbation", "atrial fibrillation with RVR", "COPD exacerbation",
             "community-acquired pneumonia", "NSTEMI", "DKA", "urosepsis", "left leg cellulitis",
             "upper GI bleed", "acute kidney injury", "syncope", "chest pain", "sepsis",
             "left MCA stroke", "hyperkalemia", "hypotension", "small bowel obstruction",
             "pulmonary embolism", "hip fracture", "delirium", "hyponatremia", "C. diff colitis")
_HISTORY = ("HTN", "hypertension", "hyperlipidemia", "DM2", "type 2 diabetes", "CAD", "CHF",
            "COPD", "CKD stage 3", "atrial fibrillation", "hypothyroidism", "GERD", "OSA on CPAP",
            "depression", "osteoarthritis", "BPH", "PVD", "prior CVA", "asthma", "gout", "anemia",
            "ESRD on HD", "NIDDM", "cirrhosis", "breast cancer")
_SYMPTOMS = ("chest pain", "shortness of breath", "dyspnea on exertion", "nausea", "vomiting",
             "fevers", "chills", "abdominal pain", "weakness", "dizziness", "cough", "leg swelling",
             "confusion", "melena", "palpitations", "orthopnea", "dysuria", "back pain", "headache")
_PROCEDURES = ("cardiac catheterization", "CABG", "appendectomy", "colonoscopy",
               "right hip replacement", "PCI with stent to the LAD", "cholecystectomy",
               "TURP", "pacemaker placement", "left knee arthroscopy", "lumpectomy")
_EXAM = ("General: NAD, resting comfortably.", "HEENT: MMM, no JVD.", "Lungs: CTAB, no wheezes.",
         "Lungs: crackles at both bases.", "CV: RRR, no m/r/g.", "CV: irregularly irregular, II/VI SEM.",
         "Abd: soft, NT/ND, +BS.", "Ext: 1+ bilateral LE edema.", "Ext: no c/c/e.",
         "Neuro: A&Ox3, CN II-XII intact, strength 5/5 throughout.", "Skin: warm, dry, no rashes.",
         "Psych: appropriate mood and affect.", "Neck: supple, JVP 8 cm.")
_COURSE_PLANS = ("continuing current management", "an outpatient stress test", "uptitrating the beta blocker",
                 "a repeat echocardiogram in 3 months", "holding anticoagulation", "a 7-day antibiotic course",
                 "diuresis to dry weight", "an MRI of the spine")

# ---------------------------------------------------------------------------------------------
# Identifier formats: labels (kept outside the span) and value generators

_Value = Callable[[random.Random, Faker], str]


def _digits(rng: random.Random, k: int) -> str:
    return "".join(rng.choices(string.digits, k=k))


def _letters(rng: random.Random, k: int) -> str:
    return "".join(rng.choices(string.ascii_uppercase, k=k))


_IDENTIFIERS: dict[str, tuple[tuple[str, ...], tuple[_Value, ...]]] = {
    "SSN": (("SSN: ", "SS#: ", "Social Security No. ", "soc sec # "),
            (lambda r, f: f.ssn(), lambda r, f: _digits(r, 9))),
    "MEDICALRECORD": (("MRN: ", "MR#: ", "Unit No: ", "Medical Record No. ", "MRN ", "Hospital #: "),
                      (lambda r, f: _digits(r, 7), lambda r, f: _digits(r, 8),
                       lambda r, f: f"{_digits(r, 3)}-{_digits(r, 2)}-{_digits(r, 2)}",
                       lambda r, f: _letters(r, 2) + _digits(r, 6), lambda r, f: "00" + _digits(r, 6))),
    "HEALTHPLAN": (("Member ID: ", "Insurance ID ", "Medicare # ", "Medicaid no. ", "Policy #: ",
                    "Subscriber ID: "),
                   (lambda r, f: _letters(r, 3) + _digits(r, 9), lambda r, f: _digits(r, 9) + _letters(r, 1),
                    lambda r, f: f"{_letters(r, 1)}{_digits(r, 8)}-{_digits(r, 2)}")),
    "ACCOUNT": (("Acct #: ", "Account No. ", "Billing account: ", "Acct: ", "Visit acct "),
                (lambda r, f: _digits(r, r.randint(8, 10)), lambda r, f: _letters(r, 2) + _digits(r, 7),
                 lambda r, f: f"{_digits(r, 4)}-{_digits(r, 6)}")),
    "LICENSE": (("DEA# ", "License No. ", "Lic #: ", "driver's license ", "state license "),
                (lambda r, f: _letters(r, 2) + _digits(r, 7),
                 lambda r, f: f.state_abbr(include_territories=False) + _digits(r, 6),
                 lambda r, f: f"{_letters(r, 1)}{_digits(r, 3)}-{_digits(r, 4)}-{_digits(r, 4)}")),
    "VEHICLE": (("license plate ", "plate # ", "tag ", "reg. "),
                (lambda r, f: f.license_plate(),
                 lambda r, f: f"{f.state_abbr(include_territories=False)} {f.license_plate()}")),
    "DEVICE": (("serial # ", "S/N: ", "serial no. ", "model/serial ", "device ID "),
               (lambda r, f: _letters(r, 3) + _digits(r, 6),
                lambda r, f: f"{_letters(r, 2)}{_digits(r, 6)}{_letters(r, 1)}",
                lambda r, f: f"{_digits(r, 4)}-{_digits(r, 5)}")),
    "BIOID": (("biometric ID ", "fingerprint ID: ", "retinal scan ID ", "palm scan no. "),
              (lambda r, f: f"BIO-{r.getrandbits(32):08x}", lambda r, f: "FP" + _digits(r, 8))),
    "IDNUM": (("Accession #: ", "Order # ", "Path #", "Job #: ", "Encounter ID: ", "Ref #: ",
               "Requisition no. "),
              (lambda r, f: f"{_letters(r, 1)}{_digits(r, 2)}-{_digits(r, 5)}",
               lambda r, f: _digits(r, r.randint(6, 9)),
               lambda r, f: f"{_letters(r, 2)}-{_digits(r, 6)}")),
}

# ---------------------------------------------------------------------------------------------
# Templates: literal text with {placeholders} (see `_Note.say`); titles such as "Dr." and
# "Mr." come from the placeholders themselves, never from the templates.

_EXTRAS = (
    "{SSN}.", "Insurance: {organization}, {HEALTHPLAN}.", "Billing: {ACCOUNT}.",
    "Pacemaker ({device_maker}, {DEVICE}) interrogated, functioning normally.",
    "{He} has an implanted defibrillator, {device_maker} {DEVICE}.",
    "{He} arrived by private car, {VEHICLE}, left in the visitor garage.",
    "Photo and {BIOID} obtained at registration.", "Specimen sent to pathology, {IDNUM}.",
    "Prescriptions written by {doctor_full}, {LICENSE}.", "Portal login recorded from IP {ip} on {date}.",
    "Written instructions and videos at {url}.", "{His} dog, {pet}, is being cared for by a neighbor.",
    "{He} is enrolled in the {study} trial.", "Case manager reachable at {email}.",
    "Records faxed to {fax} on {date}.", "{He} was found at {location} by police.",
    "{He} recently returned from {country}.", "Patient portal account: {username}.",
    "Interpreter requested; {he} is originally from {country}.", "Outside records: {IDNUM}.",
    "{He} drives for {organization} and holds a commercial {LICENSE}.",
    "Home address: {address}.", "Contact: {relative}, cell {phone}.",
)

_HPI_INTROS = (
    "{patient} is a {age} {man} with a history of {history} who presents with {symptom}.",
    "{patient} is a {age} {man} with {history} and {history}, admitted on {admit} with {symptom} and {symptom}.",
    "This is a {age} {man} with {history}, transferred from {other_hospital} on {date} for management of {problem}.",
    ("The patient is a {age} {man} followed by {pcp} at {hospital}, who was in {his} usual state of health "
     "until {date}, when {he} developed {symptom}."),
    "{age_sex} w/ {history}, {history} p/w {symptom} x {n} days.",
    "{patient}, a {age} retired {profession}, presented to the {department} on {admit} complaining of {symptom}.",
)
_HPI = (
    "{He} was seen in the {department} at {other_hospital} on {date}, where vitals were {vitals}.",
    "{He} reports {symptom} for the past {n} days, worse with exertion.",
    "{He} denies {symptom} or {symptom}.", "In the ED, {vitals}. Labs notable for {labs}.",
    "{He} was brought in by {his} {relative}, who found {him} at {location}.",
    "{He} was recently discharged from {hospital} on {date} after an admission for {problem}.",
    "Of note, {he} had a {procedure} in {year} at {other_hospital}.",
    "EMS was called to {his} home on {street} in {city}.",
    "{He} initially saw {his} PCP, {pcp}, on {date} with {symptom}.",
    "{He} was given {med} with some relief.", "Symptoms began on {date} after {he} returned from {country}.",
    "Per {his} {relative}, {he} has been more confused since {date}.",
)
_HISTORY_ITEMS = ("{history}", "{history}", "{history} s/p {procedure} ({year})",
                  "{procedure} in {year} at {other_hospital}", "{history}, diagnosed {year}", "MI {year}",
                  "{history} followed by {doctor}")
_SOCIAL = (
    "{He} lives in {city} with {his} {relative}.", "{He} lives alone in an apartment on {street} in {city}, {state}.",
    "Occupation: {profession} at {organization}.", "Retired {profession}.",
    "Former {profession}; on disability since {year}.", "Born in {country}, moved to {city} in {year}.",
    "Tobacco: {n} pack-year history, quit {year}.", "Drinks {n} beers per week. No illicit drug use.",
    "Health care proxy is {his} {relative}, {phone}.",
    "{He} is accompanied by {his} {relative} ({profession}).",
    "{He} attends a day program at {organization} twice a week.", "Has a cat named {pet}.",
    "{He} moved here from {city}, {state} {n} years ago.", "Employed by {organization} for {n} years.",
)
_FAMILY = ("Mother with {history}, died at age {family_age}.", "Father had an MI at {family_age}.",
           "Brother with {history}.", "No family history of {history}.",
           "Sister, age {family_age}, with breast cancer.", "Noncontributory.")
_LAB_SENTENCES = ("Admission labs: {labs}.", "On {date}: {labs}.", "CXR ({date}): no acute cardiopulmonary process.",
                  "CT head {date}: no acute intracranial hemorrhage.", "ECG: NSR, no acute ST changes.",
                  "Discharge labs: {labs}.", "Blood cultures {date} x2: no growth to date.",
                  "Echo {date}: EF {n}0%, mild MR.")
_COURSE = (
    "{He} was started on {med} with improvement in {his} {symptom}.",
    "{He} was seen by {doctor} of {department}, who recommended {course_plan}.",
    "Transferred to Rm {room} on {date} once hemodynamically stable.",
    "On {date} {he} was moved to the {department}, room {room}.",
    "Echocardiogram on {date} showed an EF of {n}0%.", "{His} {relative} was updated by phone at {phone}.",
    "Repeat labs on {date}: {labs}.", "Family meeting held on {date} with {his} {relative} and {attending}.",
    "{He} worked with PT and was cleared for discharge home.",
    "{consult} felt this was most likely demand ischemia.", "Plan discussed with {pcp} by phone.",
    "{He} remained afebrile and hemodynamically stable.", "{med} was held for {symptom}.",
    "{He} was diuresed with {med} with good urine output.", "Labs were notable for {labs}.",
    "Pain was controlled with {med}.",
)
_DISPOSITIONS = ("Discharged to home with services.", "Discharged to {other_hospital} for rehabilitation.",
                 "Discharged home in the care of {his} {relative}.", "Condition at discharge: stable.",
                 "Discharged to {other_hospital}, Rm {room}.",
                 "Condition: good. Diet: 2 g sodium. Activity: as tolerated.")
_FOLLOWUPS = (
    "Follow up with {pcp} in {n} weeks; call {phone} for an appointment.",
    "Appointment with {doctor} in the {department} clinic on {followup_date} at {time}.",
    "{department} clinic, {hospital}, {address}. Tel {phone}.",
    "Please check INR on {followup_date} and fax results to {pcp} at {fax}.",
    "Return to the ED if {he} develops {symptom}.", "Questions: page {doctor} at {phone} or email {email}.",
    "Visiting nurse from {organization} to start {followup_date}.",
    "Pending results will be posted to the patient portal ({url}).",
)
_DISCHARGE_FIELDS = (  # alternatives for one header field
    ("Name: {patient_full}", "Patient: {patient_full}", "PATIENT NAME: {patient_full}"), ("{MEDICALRECORD}",),
    ("Admission Date: {admit}", "Date of Admission: {admit}", "Admitted: {admit}"),
    ("Discharge Date: {discharge}", "Date of Discharge: {discharge}", "Discharged: {discharge}"),
    ("DOB: {dob}", "Date of Birth: {dob}"), ("Attending: {attending_full}", "Attending Physician: {attending_full}"),
    ("Service: {department}",), ("{ACCOUNT}",), ("Room: {room}", "Bed: {room}"), ("Age: {age_n}",),
    ("PCP: {pcp_full}", "Primary Care: {pcp_full}"), ("Sex: {mf}",),
)
_DISCHARGE_FOOTERS = (
    "Dictated by: {signature}\nDD: {discharge} {time}\nDT: {date}\nTR: {username}\n{IDNUM}\n",
    "{signature}\nAttending, {department}\nElectronically signed {discharge} {time}\n",
    "Signed electronically by {attending_full} on {discharge}.\ncc: {doctor_full}; {pcp_full}, {other_hospital}\n",
    "____________________\n{signature} ({username})\n",
    "{signature}\n{hospital}\n{address}\n",
)
_DISCHARGE_SECTIONS = {
    "hpi": ("History of Present Illness", "HPI", "History"),
    "history": ("Past Medical History", "PMH", "Past History"),
    "social": ("Social History", "SH", "Social"),
    "family": ("Family History", "FH"),
    "exam": ("Physical Examination", "Exam on Admission", "PE"),
    "labs": ("Laboratory Data", "Pertinent Results", "Studies"),
    "course": ("Hospital Course", "Brief Hospital Course", "Hospital Course by Problem"),
    "meds": ("Discharge Medications", "Medications on Discharge", "D/C Meds"),
    "disposition": ("Disposition", "Discharge Disposition", "Condition on Discharge"),
    "followup": ("Follow-up", "Follow Up Instructions", "Followup"),
}

_NURSING_HEADERS = ("Nursing Progress Note {time}-{time}", "NPN 7a-7p", "NPN 7p-7a", "{department} NSG ADMIT NOTE:",
                    "Nursing note {date}", "Nsg Note:", "{time}:", "{department} nursing progress note",
                    "NURSING ADMISSION NOTE {date} {time}")
_NURSING_INTROS = (
    "pt is a {age} {mf} admitted {date} from {other_hospital} with {problem}",
    "{age_sex} w/ {history}, {history}; transferred from {other_hospital} ER for further eval",
    "PT {patient}, {age_n} YO, S/P FALL AT {location}, HEAD CT NEG",
    "{patient} is a {age} {man} followed at {hospital} by {pcp}, arrived via amb from {other_hospital}",
    "PMH: {history}, {history}; MI {year}; {procedure} {year}",
    "ARRIVED IN TRANSFER APPROX {time} FROM {other_hospital}",
)
_NURSING_SYSTEMS = (
    (("NEURO", "Neuro", "N"), ("A&Ox3", "AOX3", "alert, oriented x2", "MAE", "PERRL", "follows commands",
                               "lethargic but arousable", "no focal deficits", "sedated on propofol",
                               "c/o HA, tylenol given with effect", "calm and cooperative",
                               "intermittently confused overnight")),
    (("CV", "C/V", "CARDIAC"), ("NSR 70-80s", "AFib 90-110s", "no ectopy", "SBP 100-130s",
                                "K 3.6 repleted", "+2 pedal edema", "pulses palp", "AV paced 70s",
                                "dopamine weaned off at {time}", "BP labile", "HR 60s SB")),
    (("RESP", "Resp", "PULM"), ("LS clear", "crackles at bases", "sats 95% on 2L NP", "diminished at bases",
                                "weaned to 40% FM", "strong cough, sm amt white sputum", "RR 18-24",
                                "O2 sats 92-96% RA", "suctioned x2 for thick tan secretions")),
    (("GI", "Gi"), ("abd soft, +BS", "tolerating clears", "no BM this shift", "passing loose brown stool",
                    "appetite poor", "NPO after MN", "TF at goal 60cc/hr", "guaiac neg")),
    (("GU", "Renal"), ("foley draining clear yellow urine 40-60cc/hr", "voiding qs", "UO 30cc/hr, MD aware",
                       "lasix given with good effect", "cr 2.1, trending down", "I/O neg 1L")),
    (("SKIN", "Skin"), ("intact", "coccyx reddened, turned q2h", "R groin site c/d/i",
                        "rash in groin, nystatin applied", "stage II ulcer sacrum, duoderm in place")),
    (("ID",), ("afebrile", "Tmax 101.2, cultures sent", "on vanco/zosyn", "WBC 14.2")),
    (("ENDO",), ("FS 140-180s, covered per RISS", "BS 129, no insulin required", "on insulin gtt")),
    (("PAIN", "Comfort"), ("denies pain", "c/o incisional pain, morphine 2mg IV with relief", "pain 4/10")),
    (("ACCESS", "Lines"), ("R SC TLC", "PIV x2", "L radial A-line", "PICC R arm")),
)
_NURSING_EVENTS = (
    "SOCIAL: {relative} in to visit, updated by {doctor}", "{relative} called x2, can be reached at {phone}",
    "{doctor} aware of SBP 80s", "transferred to Rm {room} at {time}",
    "plan for transfer to {other_hospital} {date}", "PT eval by {nurse}",
    "family mtg w/ {relative} and {attending} {date}",
    "lives w/ {relative} in {city}", "HCP: {relative} {phone}", "seen by {doctor} from {department}",
    "pt's {relative} ({profession}) asking appropriate questions", "report given to {nurse}, RN",
    "{relative} requests call at {phone} w/ any changes", "VS: {vitals}", "labs: {labs}",
    "meds: {med}, {med}", "pt states 'I want to go home to {city}'", "dtr from {state} arriving {date}",
)
_NURSING_ASSESSMENTS = ("A: stable", "A: hemodynamically stable", "A: improving resp status",
                        "A: cont renal insufficiency", "A: tolerating diuresis", "A/P: stable overnight")
_NURSING_PLANS = ("cont to monitor", "f/u AM labs", "wean vent as tol", "OOB to chair", "diurese as tol",
                  "family mtg {date}", "trend BP", "repeat lytes at {time}", "cont current plan",
                  "?transfer to floor {date}")

_LETTERHEAD_LINES = ("{hospital}", "{department}", "{address}", "Tel {phone}   Fax {fax}", "{url}", "{email}")
_LETTER_OPENINGS = (
    "Thank you for referring {patient} to the {department} clinic at {hospital}. I saw {him} on {date}.",
    "I had the pleasure of seeing {patient} in follow-up in the {department} today.",
    "I am writing to update you on our mutual patient, {patient}, whom I saw on {date}.",
    "{patient} returned to clinic on {date} for follow-up of {problem}.",
    "Many thanks for asking me to see {patient}, a {age} {man} with {history}.",
)
_LETTER_HISTORY = (
    "As you know, {he} is a {age} {man} with {history} and {history}.",
    "Since {his} last visit on {date}, {he} reports {symptom}.",
    "{He} was admitted to {other_hospital} from {admit} to {discharge} with {problem}.",
    "{He} denies {symptom}, {symptom} or {symptom}.", "{His} medications include {med} and {med}.",
    "{He} underwent {procedure} in {year}.", "Today {he} is accompanied by {his} {relative}.",
)
_LETTER_PLANS = (
    "My impression is that {his} symptoms are most consistent with {problem}.",
    "I have started {med} and asked {him} to keep a log of {his} readings.",
    "I have ordered repeat labs and an echocardiogram.", "We will see {him} again on {followup_date}.",
    "I would be grateful if you could check {his} renal function in {n} weeks.",
    "{He} may upload home readings to our portal at {url}.", "I have referred {him} to {doctor} in {department}.",
    "Should you have any questions, please contact me at {phone} or {email}.", "Our fax number is {fax}.",
)
_VALEDICTIONS = ("Sincerely,", "Yours sincerely,", "Best regards,", "Kind regards,", "With best wishes,")


class _Person(NamedTuple):
    first: str
    middle: str
    last: str
    title: str  # "Mr.", "Dr."...; empty for people never addressed with one
    type: str   # PATIENT or DOCTOR


class _Note:
    """One note under construction: a persona, a timeline, and the text/spans appended so far."""

    def __init__(self, rng: random.Random, fake: Faker, case: Callable[[str], str] | None):
        self.rng, self.fake, self.case = rng, fake, case
        self.pieces: list[str] = []
        self.spans: list[Span] = []
        self.length = 0
        male = rng.random() < 0.5
        self.words = dict(zip(("he", "He", "his", "His", "him", "mf"),
                              ("he", "He", "his", "His", "him", "M") if male
                              else ("she", "She", "her", "Her", "her", "F")))
        self.words["man"] = rng.choice(("man", "male", "gentleman") if male else ("woman", "female", "lady"))
        patient = self._person("PATIENT", male, "Mr." if male else rng.choice(("Ms.", "Mrs.")))
        doctors = [self._person("DOCTOR", rng.random() < 0.5, "Dr.") for _ in range(4)]
        self.people = {"patient": [patient], "attending": doctors[:1], "pcp": doctors[1:2], "doctor": doctors,
                       "nurse": [self._person("DOCTOR", rng.random() < 0.2, "")]}
        spouse = ("wife", "female") if male else ("husband", "male")
        self.relatives = [(relation, self._person("PATIENT", sex == "male", "", patient.last))
                          for relation, sex in rng.sample([spouse, ("daughter", "female"), ("son", "male"),
                                                           ("sister", "female"), ("brother", "male")], 2)]
        self.age = rng.randint(90, 104) if rng.random() < 0.05 else rng.randint(19, 89)
        self.admit = date(rng.randint(1995, 2095), 1, 1) + timedelta(days=rng.randrange(365))
        self.discharge = self.admit + timedelta(days=rng.randint(1, 14))
        self.dob = date(self.admit.year - self.age, self.admit.month, min(self.admit.day, 28)) - timedelta(
            days=rng.randint(1, 360))
        self.hospital = self._hospital_name()
        self.other_hospital = self._hospital_name()
        self.city, self.state = self._city_name(), fake.state()

    # -- building ---------------------------------------------------------------------------

    def text(self, piece: str) -> None:
        piece = self.case(piece) if self.case else piece
        self.pieces.append(piece)
        self.length += len(piece)

    def phi(self, piece: str, type_: str) -> None:
        start = self.length
        self.text(piece)
        self.spans.append(Span(start, self.length, type_, self.pieces[-1]))

    def say(self, template: str) -> None:
        """Append `template`, rendering each {placeholder}: a per-note word, an identifier type
        of `_IDENTIFIERS`, a person of `people` (suffix `_full` for a full name) or `put_<name>`."""
        for i, part in enumerate(_PLACEHOLDER.split(template)):
            if not i % 2:
                if part:
                    self.text(part)
            elif part in self.words:
                self.text(self.words[part])
            elif part in _IDENTIFIERS:
                labels, values = _IDENTIFIERS[part]
                self.text(self.rng.choice(labels))
                self.phi(self.rng.choice(values)(self.rng, self.fake), part)
            elif part.removesuffix("_full") in self.people:
                self._mention(self.rng.choice(self.people[part.removesuffix("_full")]), part.endswith("_full"))
            else:
                getattr(self, f"put_{part}")()

    def sentences(self, templates: Sequence[str], low: int, high: int, sep: str = " ") -> None:
        """Say between `low` and `high` distinct templates in random order."""
        for i, template in enumerate(self.rng.sample(templates, min(len(templates), self.rng.randint(low, high)))):
            self.say((sep if i else "") + template)

    def document(self, doc_id: str) -> Document:
        return Document(doc_id, "".join(self.pieces), tuple(self.spans)).validate()

    # -- persona helpers --------------------------------------------------------------------

    def _person(self, type_: str, male: bool, title: str, last: str | None = None) -> _Person:
        first = self.fake.first_name_male() if male else self.fake.first_name_female()
        return _Person(first, self.rng.choice(string.ascii_uppercase), last or self.fake.last_name(), title, type_)

    def _mention(self, person: _Person, full: bool) -> None:
        first, last = person.first, person.last
        if not full and person.title and self.rng.random() < 0.45:
            self.text(person.title + " ")
            self.phi(self.rng.choice((last, last, f"{first} {last}")), person.type)
            return
        forms = [f"{first} {last}", f"{last}, {first}", f"{last}, {first}".upper(),
                 f"{first} {person.middle}. {last}", f"{first[0]}. {last}"]
        if not full:
            forms += [last, first, f"{first[0]}{last[0]}", f"{first[0]}.{last[0]}."]
        self.phi(self.rng.choice(forms), person.type)

    def _hospital_name(self) -> str:
        rng, city, last = self.rng, self._city_name(), self.fake.last_name()
        return rng.choice((
            f"St. {rng.choice(_SAINTS)}'s Medical Center", f"Saint {rng.choice(_SAINTS)}'s Hospital",
            f"{city} General Hospital", f"{last} Memorial Hospital", f"{city} Medical Center",
            f"{last} Regional Medical Center", f"{city} Community Hospital", f"Mercy Hospital of {city}",
            f"{last} Rehabilitation Hospital", f"{last} Clinic", f"University of {self.fake.state()} Hospital",
            f"{city} VA Medical Center", f"{last} Nursing and Rehabilitation Center"))

    def _city_name(self) -> str:
        return self.fake.city() if self.rng.random() < 0.6 else self.rng.choice(_CITIES)

    def _date(self, day: date, full: bool) -> None:
        """A DATE span for `day`; `full` forces a format with the year."""
        if not full and self.rng.random() < 0.03:
            self.phi(self.rng.choice(_HOLIDAYS), "DATE")
            return
        formats = _DATES_WITH_YEAR if full or self.rng.random() < 0.5 else _DATES_WITHOUT_YEAR
        self.phi(self.rng.choice(formats)(day), "DATE")

    def _doctor_name(self) -> tuple[str, str]:
        doctor = self.rng.choice(self.people["doctor"])
        return doctor.first, doctor.last

    def _slug(self) -> str:
        return "".join(word[0] for word in self.hospital.split() if word[0].isupper()).lower()

    # -- placeholders: people ---------------------------------------------------------------

    def put_signature(self) -> None:
        self._mention(self.people["attending"][0], True)
        self.text(self.rng.choice((", M.D.", ", MD", " MD", ", M.D., Ph.D.", "")))

    def put_dear(self) -> None:
        pcp = self.people["pcp"][0]
        if self.rng.random() < 0.25:
            self.phi(pcp.first, "DOCTOR")
        else:
            self.text("Dr. ")
            self.phi(self.rng.choice((pcp.last, f"{pcp.first} {pcp.last}")), "DOCTOR")

    def put_consult(self) -> None:
        self.put_department()
        self.text(" (")
        self._mention(self.rng.choice(self.people["doctor"]), False)
        self.text(")")

    def put_relative(self) -> None:
        relation, person = self.rng.choice(self.relatives)
        self.text(relation + " ")
        self.phi(self.rng.choice((person.first, f"{person.first} {person.last}")), "PATIENT")

    def put_username(self) -> None:
        first, last = self._doctor_name()
        self.phi(self.rng.choice((self.fake.user_name(), f"{first[0]}{last}"[:8].lower(),
                                  f"{first[0]}{last[0]}{self.rng.randint(1, 99)}".lower(),
                                  f"{last[:5]}{first[0]}".lower())), "USERNAME")

    def put_profession(self) -> None:
        job = self.fake.job()
        self.phi(job.lower() if self.rng.random() < 0.3 and "," not in job else self.rng.choice(_PROFESSIONS),
                 "PROFESSION")

    # -- placeholders: ages and dates -------------------------------------------------------

    def put_age(self) -> None:
        self.phi(str(self.age), "AGE")
        self.text(self.rng.choice(("-year-old", " year old", " yo", "yo", " y/o", "-yr-old")))

    def put_age_n(self) -> None:
        self.phi(str(self.age), "AGE")

    def put_age_sex(self) -> None:
        self.phi(str(self.age), "AGE")
        self.text(self.rng.choice(("", " ", " yo ")) + self.words["mf"])

    def put_family_age(self) -> None:
        self.phi(str(self.rng.randint(40, 97)), "AGE")

    def put_date(self) -> None:
        self._date(self.admit + timedelta(days=self.rng.randint(-30, (self.discharge - self.admit).days)), False)

    def put_admit(self) -> None:
        self._date(self.admit, True)

    def put_discharge(self) -> None:
        self._date(self.discharge, True)

    def put_dob(self) -> None:
        self._date(self.dob, True)

    def put_followup_date(self) -> None:
        self._date(self.discharge + timedelta(days=self.rng.randint(3, 90)), False)

    def put_year(self) -> None:
        self.phi(str(self.admit.year - self.rng.randint(1, 25)), "DATE")

    # -- placeholders: contact details --------------------------------------------------------

    def _phone(self, type_: str) -> None:
        rng = self.rng
        area, exchange, line = rng.randint(201, 989), rng.randint(200, 999), rng.randint(0, 9999)
        self.phi(rng.choice((f"({area}) {exchange}-{line:04d}", f"{area}-{exchange}-{line:04d}",
                             f"{area}.{exchange}.{line:04d}", f"{area}{exchange}{line:04d}",
                             f"{exchange}-{line:04d}", f"{area}-{exchange}-{line:04d} x{rng.randint(100, 9999)}",
                             self.fake.phone_number())), type_)

    def put_phone(self) -> None:
        self._phone("PHONE")

    def put_fax(self) -> None:
        self._phone("FAX")

    def put_email(self) -> None:
        first, last = self._doctor_name()
        domain = self.rng.choice((f"{self._slug()}.org", self.fake.domain_name(), self.fake.free_email_domain()))
        self.phi(self.rng.choice((f"{first[0]}{last}@{domain}".lower(), f"{first}.{last}@{domain}".lower(),
                                  self.fake.email())), "EMAIL")

    def put_url(self) -> None:
        slug = self._slug()
        self.phi(self.rng.choice((f"www.{slug}.org", f"https://{slug}.org/patients", f"https://portal.{slug}.org/login",
                                  f"http://www.{self.fake.domain_name()}", self.fake.url())), "URL")

    def put_ip(self) -> None:
        self.phi(self.fake.ipv4() if self.rng.random() < 0.7 else self.fake.ipv4_private(), "IPADDR")

    # -- placeholders: locations and organisations ------------------------------------------

    def put_hospital(self) -> None:
        abbreviation = self._slug().upper()
        self.phi(abbreviation if self.rng.random() < 0.25 and len(abbreviation) > 2 else self.hospital, "HOSPITAL")

    def put_other_hospital(self) -> None:
        self.phi(self.other_hospital, "HOSPITAL")

    def put_department(self) -> None:
        self.phi(self.rng.choice(_DEPARTMENTS), "DEPARTMENT")

    def put_room(self) -> None:
        rng = self.rng
        self.phi(rng.choice((f"{rng.randint(1, 12)}{rng.choice('ABCDEFGH')}",
                             f"{rng.randint(1, 9)}{rng.randint(1, 40):02d}",
                             f"{rng.randint(1, 9)}-{rng.randint(1, 40)}",
                             f"{rng.choice('NSEW')}{rng.randint(100, 999)}")),
                 "ROOM")

    def put_street(self) -> None:
        self.phi(self.fake.street_address(), "STREET")

    def put_city(self) -> None:
        self.phi(self.city if self.rng.random() < 0.6 else self._city_name(), "CITY")

    def put_state(self) -> None:
        self.phi(self.rng.choice((self.state, self.fake.state_abbr(include_territories=False))), "STATE")

    def put_zip(self) -> None:
        self.phi(self.fake.zipcode_plus4() if self.rng.random() < 0.2 else self.fake.zipcode(), "ZIP")

    def put_address(self) -> None:
        self.say(self.rng.choice(("{street}\n{city}, {state} {zip}", "{street}, {city}, {state} {zip}",
                                  "{street}, {city} {state} {zip}")))

    def put_country(self) -> None:
        self.phi(self.rng.choice(_COUNTRIES), "COUNTRY")

    def put_location(self) -> None:
        last, city = self.fake.last_name(), self._city_name()
        self.phi(self.rng.choice((f"{last} Park", f"{city} Mall", f"{last} Shelter", f"{city} Airport",
                                  f"{last} Beach", f"Lake {last}", f"{last} Stadium", f"{city} Bus Terminal",
                                  f"{last} Senior Center")), "LOCATION-OTHER")

    def put_organization(self) -> None:
        last, city = self.fake.last_name(), self._city_name()
        self.phi(self.rng.choice((self.fake.company(), self.fake.company(), f"{city} Fire Department",
                                  f"{last} Elementary School", f"Visiting Nurse Association of {city}",
                                  f"{city} Council on Aging", f"{last} Construction", f"First {last} Bank",
                                  f"{city} Police Department", f"{last} Health Plan")), "ORGANIZATION")

    def put_pet(self) -> None:
        self.phi(self.rng.choice(_PETS) if self.rng.random() < 0.5 else self.fake.first_name(), "OTHER")

    def put_study(self) -> None:
        self.phi(f"{_letters(self.rng, self.rng.randint(4, 7))}-{self.rng.randint(1, 9)}", "OTHER")

    # -- placeholders: clinical filler ------------------------------------------------------

    def put_vitals(self) -> None:
        r = self.rng
        parts = [f"T {r.uniform(96.5, 101.8):.1f}", f"HR {r.randint(52, 128)}",
                 f"BP {r.randint(88, 182)}/{r.randint(44, 102)}", f"RR {r.randint(12, 28)}",
                 f"SpO2 {r.randint(88, 100)}% on {r.choice(('RA', '2L NC', '4L', 'room air', '40% FM'))}"]
        self.text(r.choice((", ", " ", "; ")).join(p for p in parts if r.random() < 0.85) or parts[1])

    def put_labs(self) -> None:
        r = self.rng
        sep, eq = r.choice((", ", "; ", " ")), r.choice((" ", " = ", ": "))
        self.text(sep.join(f"{name}{eq}{round(r.uniform(low, high), digits) if digits else r.randint(low, high)}"
                           for name, low, high, digits in r.sample(_LABS, r.randint(2, 6))))

    def put_med(self) -> None:
        drug, doses, unit, route = self.rng.choice(_MEDS)
        self.text(f"{drug} {self.rng.choice(doses):g} {unit} {self.rng.choice(_ROUTES[route])} "
                  f"{self.rng.choice(_FREQUENCIES)}")

    def put_med_list(self) -> None:
        numbered = self.rng.random() < 0.7
        for i in range(1, self.rng.randint(3, 10) + 1):
            self.say(f"{i}. {{med}}\n" if numbered else "- {med}\n")

    def put_history_list(self) -> None:
        items = [self.rng.choice(_HISTORY_ITEMS) for _ in range(self.rng.randint(2, 6))]
        self.say("".join(f"{i}. {item}\n" for i, item in enumerate(items, 1)) if self.rng.random() < 0.5
                 else ", ".join(items) + ".")

    def put_problem(self) -> None:
        self.text(self.rng.choice(_PROBLEMS))

    def put_history(self) -> None:
        self.text(self.rng.choice(_HISTORY))

    def put_symptom(self) -> None:
        self.text(self.rng.choice(_SYMPTOMS))

    def put_procedure(self) -> None:
        self.text(self.rng.choice(_PROCEDURES))

    def put_course_plan(self) -> None:
        self.text(self.rng.choice(_COURSE_PLANS))

    def put_device_maker(self) -> None:
        self.text(self.rng.choice(_DEVICE_MAKERS))

    def put_time(self) -> None:
        hour, minute = self.rng.randrange(24), self.rng.choice((0, 0, 15, 30, 45))
        self.text(self.rng.choice((f"{hour:02d}{minute:02d}", f"{hour:02d}:{minute:02d}",
                                   f"{(hour - 1) % 12 + 1}{'am' if hour < 12 else 'pm'}")))

    def put_n(self) -> None:
        self.text(str(self.rng.randint(2, 6)))


# ---------------------------------------------------------------------------------------------
# Note kinds


def _maybe_extra(note: _Note, probability: float) -> None:
    if note.rng.random() < probability:
        note.say(("" if note.pieces[-1].endswith("\n") else " ") + note.rng.choice(_EXTRAS))


def _discharge(note: _Note) -> None:
    rng = note.rng
    upper_titles = rng.random() < 0.6
    inline = rng.random() < 0.4
    if rng.random() < 0.3:
        note.say("Record date: {admit}\n\n")
    note.say(rng.choice(("{hospital}\nDISCHARGE SUMMARY\n\n", "DISCHARGE SUMMARY\n",
                         "Discharge Summary - {hospital}\n\n", "{hospital}\n{department}\nDischarge Summary\n\n")))
    fields = [rng.choice(field) for field in rng.sample(_DISCHARGE_FIELDS, rng.randint(3, 8))]
    for i, field in enumerate(fields):
        note.say(field + ("\n" if i % 2 or rng.random() < 0.5 or i == len(fields) - 1 else "    "))

    middle = [s for s in ("history", "social", "family", "exam", "labs") if rng.random() < 0.75]
    rng.shuffle(middle)
    tail = [s for s in ("meds", "disposition", "followup") if rng.random() < 0.8]
    for section in ["hpi", *middle, "course", *tail]:
        title = rng.choice(_DISCHARGE_SECTIONS[section])
        note.text("\n" + (title.upper() if upper_titles else title) + (": " if inline and section != "meds" else ":\n"))
        _discharge_section(note, section)
        _maybe_extra(note, 0.2)
        note.text("\n")
    note.text("\n")
    note.say(rng.choice(_DISCHARGE_FOOTERS))


def _discharge_section(note: _Note, section: str) -> None:
    rng = note.rng
    if section == "hpi":
        note.say(rng.choice(_HPI_INTROS) + " ")
        note.sentences(_HPI, 2, 4)
    elif section == "history":
        note.say("{history_list}")
    elif section == "social":
        note.sentences(_SOCIAL, 2, 4)
    elif section == "family":
        note.sentences(_FAMILY, 1, 2)
    elif section == "exam":
        note.say("{vitals}\n")
        note.sentences(_EXAM, 3, 6, "\n")
    elif section == "labs":
        note.sentences(_LAB_SENTENCES, 1, 3, rng.choice((" ", "\n")))
    elif section == "course":
        if rng.random() < 0.5:
            note.sentences(_COURSE, 3, 6)
        else:
            for i in range(rng.randint(1, 4)):
                note.say(("\n" if i else "") + "# {problem}: ")
                note.sentences(_COURSE, 1, 3)
    elif section == "meds":
        note.say("{med_list}")
    elif section == "disposition":
        note.sentences(_DISPOSITIONS, 1, 2)
    else:
        note.sentences(_FOLLOWUPS, 1, 3, rng.choice((" ", "\n")))


def _nursing(note: _Note) -> None:
    rng = note.rng
    sep = rng.choice(("; ", "; ", "\n", ". ", " \n \n"))
    if rng.random() < 0.7:
        note.say(rng.choice(_NURSING_HEADERS) + rng.choice(("\n", " ")))
    items = [rng.choice(_NURSING_INTROS)] if rng.random() < 0.6 else []
    for labels, phrases in rng.sample(_NURSING_SYSTEMS, rng.randint(3, 8)):
        label = rng.choice(labels) + rng.choice((": ", "- ", " "))
        items.append(label + ", ".join(rng.sample(phrases, rng.randint(1, min(4, len(phrases))))))
    for event in rng.sample(_NURSING_EVENTS, rng.randint(1, 4)):
        items.insert(rng.randint(1, len(items)), event)
    if rng.random() < 0.6:
        items.insert(rng.randint(1, len(items)), rng.choice(_EXTRAS).rstrip("."))
    items.append(rng.choice(_NURSING_ASSESSMENTS))
    items.append("P: " + ", ".join(rng.sample(_NURSING_PLANS, rng.randint(1, 3))))
    note.say(sep.join(items))
    note.say(rng.choice((".\n", "\n", ".\n{nurse}, RN\n", "\n-{username}\n", "\n{nurse_full} RN\n")))


def _letter(note: _Note) -> None:
    rng = note.rng
    lines = [line for line in _LETTERHEAD_LINES if rng.random() < 0.7]
    if lines:
        note.say("\n".join(lines) + "\n\n")
    note.say("{admit}\n\n")
    if rng.random() < 0.7:
        note.say("{pcp_full}, M.D.\n{other_hospital}\n{address}\n\n")
    note.say("\n".join(rng.sample(("RE: {patient_full}", "DOB: {dob}", "{MEDICALRECORD}"), rng.randint(1, 3))) + "\n\n")
    note.say(rng.choice(("Dear {dear},\n\n", "Dear Colleague,\n\n", "Dear {dear}:\n\n")))
    note.say(rng.choice(_LETTER_OPENINGS) + " ")
    note.sentences(_LETTER_HISTORY, 2, 4)
    note.text("\n\n")
    if rng.random() < 0.6:
        note.sentences(_SOCIAL, 1, 3)
        note.text("\n\n")
    note.say("On examination, {vitals}. ")
    note.sentences(_EXAM, 1, 3)
    _maybe_extra(note, 0.5)
    note.text("\n\n")
    note.sentences(_LETTER_PLANS, 2, 4)
    _maybe_extra(note, 0.5)
    note.say(f"\n\n{rng.choice(_VALEDICTIONS)}\n\n{{signature}}\n" + rng.choice(("{department}\n", "{hospital}\n", "")))
    if rng.random() < 0.5:
        note.say(rng.choice(("cc: {patient_full}\n{address}\n", "cc: {doctor_full}, M.D.\n")))


_BUILDERS = {"discharge": _discharge, "nursing": _nursing, "letter": _letter}
_CASINGS = {"discharge": 0.1, "nursing": 0.45, "letter": 0.05}  # chance of an all-caps note


def generate_documents(n: int, seed: int = 0, kinds: Sequence[str] = KINDS) -> Iterator[Document]:
    """Yield `n` synthetic notes "synth-00001"...; the same seed gives the same documents.

    Each document depends only on (seed, index), so a prefix of a longer run is identical."""
    unknown = set(kinds) - set(_BUILDERS)
    if unknown or not kinds:
        raise ValueError(f"unknown note kinds {sorted(unknown)}; choose from {', '.join(KINDS)}")
    fake = Faker("en_US")
    for index in range(1, n + 1):
        rng = random.Random(f"deidpool-synth:{seed}:{index}")
        fake.seed_instance(rng.getrandbits(64))
        kind = rng.choice(kinds)
        roll = rng.random()
        case = str.upper if roll < _CASINGS[kind] else str.lower if kind == "nursing" and roll > 0.85 else None
        note = _Note(rng, fake, case)
        _BUILDERS[kind](note)
        yield note.document(f"synth-{index:05d}")
