// The emulator's web: a few hundred deterministic documents across real-looking sites, topics and file types.
import { TOPICS } from "./topics.js";

export type Filetype = "pdf" | "doc" | "docx" | "xls" | "xlsx" | "ppt" | "pptx" | "html";

export interface CorpusDoc {
  id: number;
  url: string;
  site: string;
  title: string;
  description: string;
  /** Plain-text paragraphs; markdown and html are rendered from them. */
  paragraphs: string[];
  filetype: Filetype;
  topic: string;
  /** ISO 3166 alpha-2 (or "EU") of the publisher, when it has one; location-aware searches prefer it. */
  country?: string;
  publishedAt: string;
  links: string[];
}

interface Angle {
  label: string;
  filetypes: Filetype[];
  section: string;
  intro: (stem: string) => string;
}

const ANGLES: Angle[] = [
  { label: "Overview", filetypes: ["html"], section: "wiki", intro: (s) => `This page gives an overview of ${s.toLowerCase()}.` },
  {
    label: "A Beginner's Guide",
    filetypes: ["html"],
    section: "guides",
    intro: (s) => `New to ${s.toLowerCase()}? Start with the basics below.`,
  },
  {
    label: "Frequently Asked Questions",
    filetypes: ["html"],
    section: "faq",
    intro: (s) => `Answers to common questions about ${s.toLowerCase()}.`,
  },
  { label: "Tutorial", filetypes: ["html"], section: "tutorials", intro: (s) => `A step-by-step tutorial on ${s.toLowerCase()}.` },
  { label: "News and Analysis", filetypes: ["html"], section: "news", intro: (s) => `Latest reporting on ${s.toLowerCase()}.` },
  {
    label: "Case Study",
    filetypes: ["html"],
    section: "case-studies",
    intro: (s) => `A case study examining ${s.toLowerCase()} in practice.`,
  },
  {
    label: "Annual Report",
    filetypes: ["pdf"],
    section: "reports",
    intro: (s) => `This annual report reviews developments in ${s.toLowerCase()}.`,
  },
  {
    label: "Research Paper",
    filetypes: ["pdf"],
    section: "research",
    intro: (s) => `Abstract: we study ${s.toLowerCase()} using new data.`,
  },
  { label: "Technical Report", filetypes: ["pdf"], section: "publications", intro: (s) => `Technical report on ${s.toLowerCase()}.` },
  { label: "Policy Brief", filetypes: ["docx", "doc"], section: "policy", intro: (s) => `Policy brief: options for ${s.toLowerCase()}.` },
  { label: "Data Tables", filetypes: ["xlsx", "xls"], section: "data", intro: (s) => `Data tables with statistics on ${s.toLowerCase()}.` },
  {
    label: "Presentation Slides",
    filetypes: ["pptx", "ppt"],
    section: "slides",
    intro: (s) => `Slides from a talk about ${s.toLowerCase()}.`,
  },
];

const GENERIC = [
  "The figures in this document were last reviewed by the editorial team.",
  "Readers can find further references at the end of the page.",
  "Comments and corrections are welcome through the contact form.",
  "Earlier versions of this material were published in print.",
  "Related resources are listed in the sidebar.",
];

const COUNTRY_BY_SITE: Record<string, string> = {
  "bbc.co.uk": "GB",
  "nhs.uk": "GB",
  "gov.uk": "GB",
  "ox.ac.uk": "GB",
  "theguardian.com": "GB",
  "ec.europa.eu": "EU",
  "ecb.europa.eu": "EU",
  "esa.int": "EU",
  "energy.gov": "US",
  "nrel.gov": "US",
  "noaa.gov": "US",
  "epa.gov": "US",
  "cdc.gov": "US",
  "nih.gov": "US",
  "nasa.gov": "US",
  "census.gov": "US",
  "bls.gov": "US",
  "ed.gov": "US",
  "federalreserve.gov": "US",
  "usda.gov": "US",
  "cisa.gov": "US",
  "nist.gov": "US",
  "nytimes.com": "US",
  "mit.edu": "US",
  "stanford.edu": "US",
  "mayoclinic.org": "US",
};

/** Small deterministic PRNG (mulberry32) so the corpus, and so search results, are the same on every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const slugify = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "");

/** Builds the corpus: every topic × every angle, plus extra variants, about 16 documents per topic. */
export function buildCorpus(seed = 402): CorpusDoc[] {
  const rand = prng(seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];
  const docs: CorpusDoc[] = [];
  for (const topic of TOPICS) {
    const perTopic = 16;
    for (let i = 0; i < perTopic; i++) {
      const angle = ANGLES[i % ANGLES.length];
      const stem = topic.stems[i % topic.stems.length];
      const site = topic.sites[(i * 7 + topic.key.length) % topic.sites.length];
      const filetype = pick(angle.filetypes);
      const year = 2015 + Math.floor(rand() * 11);
      const month = 1 + Math.floor(rand() * 12);
      const day = 1 + Math.floor(rand() * 28);
      const title =
        angle.label === "Annual Report" || angle.label === "Data Tables" ? `${stem}: ${angle.label} ${year}` : `${stem}: ${angle.label}`;
      const shuffled = [...topic.sentences].sort(() => rand() - 0.5);
      const count = 4 + Math.floor(rand() * 3);
      const body = shuffled.slice(0, count);
      const paragraphs = [
        `${angle.intro(stem)} ${body[0]}`,
        body.slice(1, 3).join(" "),
        body.slice(3).join(" ") + (rand() < 0.5 ? ` ${pick(GENERIC)}` : ""),
      ].filter((p) => p.trim().length > 0);
      const ext = filetype === "html" ? (rand() < 0.3 ? ".html" : "") : `.${filetype}`;
      const path = angle.section === "news" ? `news/${year}/${String(month).padStart(2, "0")}` : angle.section;
      const url = `https://${site}/${path}/${slugify(stem)}-${slugify(angle.label)}-${docs.length + 1}${ext}`;
      docs.push({
        id: docs.length + 1,
        url,
        site,
        title,
        description: paragraphs[0].slice(0, 200),
        paragraphs,
        filetype,
        topic: topic.key,
        country: COUNTRY_BY_SITE[site],
        publishedAt: `${year}-${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}`,
        links: [],
      });
    }
  }
  // Each page links to a few siblings on the same topic, so fetch returns real links.
  const byTopic = new Map<string, CorpusDoc[]>();
  for (const d of docs) byTopic.set(d.topic, [...(byTopic.get(d.topic) ?? []), d]);
  for (const d of docs) {
    const siblings = byTopic.get(d.topic)!.filter((s) => s.id !== d.id);
    d.links = [0, 3, 7].map((k) => siblings[(d.id + k) % siblings.length].url);
  }
  return docs;
}
