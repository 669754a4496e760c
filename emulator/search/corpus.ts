// The emulator's web: a few hundred deterministic documents across real-looking sites, topics and file types.
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

interface Topic {
  key: string;
  stems: string[];
  sites: string[];
  sentences: string[];
}

// Sentences deliberately vary their vocabulary (car / automobile / vehicle, doctor / physician ...) so that a
// semantic search finds documents a literal one misses, and phrases appear both adjacent and split.
const TOPICS: Topic[] = [
  {
    key: "electric-vehicles",
    stems: ["Electric Vehicles", "EV Charging Networks", "Battery Electric Cars"],
    sites: ["energy.gov", "en.wikipedia.org", "reuters.com", "theguardian.com", "mit.edu"],
    sentences: [
      "An electric car stores energy in a lithium-ion battery pack and drives its wheels with one or more motors.",
      "Public charging stations now line most highways, and a fast charger can add 300 km of range in twenty minutes.",
      "The first mass-market automobile with a battery drivetrain sold in large numbers only after 2010.",
      "Vehicle owners who charge at home overnight pay far less per kilometre than drivers who buy petrol.",
      "Battery prices fell by almost ninety percent over the last decade, making the EV cheaper to build.",
      "Cold weather reduces range because the cabin heater and the battery chemistry both draw on the pack.",
      "Regenerative braking turns the motor into a generator and returns energy to the battery when slowing down.",
      "Fleet operators are replacing delivery vans with electric vehicles to cut fuel and maintenance costs.",
      "Grid operators worry that millions of cars charging at six in the evening could overload local transformers.",
      "Recycling plants recover cobalt, nickel and lithium from spent battery cells.",
    ],
  },
  {
    key: "solar-power",
    stems: ["Solar Power", "Rooftop Solar Panels", "Photovoltaic Energy"],
    sites: ["energy.gov", "nrel.gov", "en.wikipedia.org", "nature.com", "ec.europa.eu"],
    sentences: [
      "Solar panels convert sunlight into electricity using photovoltaic cells made of crystalline silicon.",
      "Installers mount the panels facing south so that solar gain peaks around noon.",
      "A typical household system of eight kilowatts produces more power in summer than the home consumes.",
      "Net metering lets owners sell surplus electricity back to the utility at retail rates.",
      "Utility-scale solar farms now deliver the cheapest new electricity in many sunny regions.",
      "Panel efficiency improved from fifteen to over twenty-two percent for commercial modules.",
      "Pairing solar panels with battery storage keeps the lights on after sunset.",
      "Dust and snow on the panels reduce output, so some solar farms use robots to clean them.",
      "Perovskite cells promise cheaper modules but still degrade faster than silicon.",
    ],
  },
  {
    key: "climate-change",
    stems: ["Climate Change", "Global Warming Science", "Greenhouse Gas Emissions"],
    sites: ["noaa.gov", "epa.gov", "nature.com", "bbc.co.uk", "ipcc.ch"],
    sentences: [
      "Global warming is driven mainly by carbon dioxide released from burning coal, oil and gas.",
      "Average surface temperature has risen by about 1.1 degrees Celsius since pre-industrial times.",
      "Sea level rise threatens coastal cities as glaciers melt and warming water expands.",
      "Climate change increases the frequency of heatwaves, droughts and intense rainfall.",
      "Methane from agriculture and leaking gas wells traps far more heat than carbon dioxide per tonne.",
      "Scientists reconstruct past climate from ice cores, tree rings and ocean sediments.",
      "The Paris Agreement aims to keep warming well below two degrees.",
      "Reducing emissions requires cleaner power, efficient buildings and electrified transport.",
      "Arctic sea ice has shrunk dramatically in late summer over the past four decades.",
    ],
  },
  {
    key: "heart-health",
    stems: ["Heart Health", "Cardiovascular Disease", "Preventing Heart Attacks"],
    sites: ["cdc.gov", "who.int", "nih.gov", "mayoclinic.org", "nhs.uk"],
    sentences: [
      "Heart disease remains the leading cause of death for adults worldwide.",
      "A physician measures blood pressure and cholesterol to estimate cardiovascular risk.",
      "Chest pain that spreads to the arm or jaw may signal a heart attack and needs emergency care.",
      "Regular exercise, a diet rich in vegetables and not smoking lower the chance of illness.",
      "Your doctor may prescribe statins when cholesterol stays high despite lifestyle changes.",
      "Myocardial infarction happens when a blocked artery starves the heart muscle of oxygen.",
      "High blood pressure often has no symptoms, which is why it is called a silent condition.",
      "Cardiac rehabilitation programs help patients return to normal activity after surgery.",
      "Clinicians recommend at least 150 minutes of moderate activity every week.",
    ],
  },
  {
    key: "vaccines",
    stems: ["Vaccines", "Immunization Schedules", "How Vaccination Works"],
    sites: ["who.int", "cdc.gov", "nih.gov", "nhs.uk", "nature.com"],
    sentences: [
      "Vaccines train the immune system to recognise a pathogen without causing the disease.",
      "Children receive most routine immunizations before they start school.",
      "Herd immunity protects people who cannot be vaccinated when enough of the population is immune.",
      "Messenger RNA vaccines instruct cells to make a harmless piece of viral protein.",
      "Side effects such as a sore arm or mild fever usually pass within two days.",
      "Measles cases rise quickly wherever vaccination coverage falls below ninety-five percent.",
      "Clinical trials test each vaccine for safety and efficacy in tens of thousands of volunteers.",
      "Booster doses restore protection that wanes over time.",
    ],
  },
  {
    key: "python",
    stems: ["Python Programming", "Python Virtual Environments", "Python Type Hints"],
    sites: ["docs.python.org", "stackoverflow.com", "github.com", "realpython.com", "medium.com"],
    sentences: [
      "Python is a dynamically typed language known for readable syntax and a large standard library.",
      "Create a virtual environment with python -m venv so project dependencies stay isolated.",
      "Type hints let static checkers such as mypy find a bug before the code runs.",
      "List comprehensions build a new list from an iterable in a single expression.",
      "The pip installer fetches packages from the Python Package Index.",
      "Asyncio runs many network requests concurrently on a single thread with an event loop.",
      "Decorators wrap a function to add caching, logging or access checks without changing its body.",
      "Pandas data frames make it quick to load, filter and summarise tabular data.",
      "To fix an import error, check that the virtual environment is activated.",
    ],
  },
  {
    key: "javascript",
    stems: ["JavaScript", "JavaScript Promises", "Node.js Streams"],
    sites: ["developer.mozilla.org", "nodejs.org", "stackoverflow.com", "github.com", "medium.com"],
    sentences: [
      "JavaScript runs in every web browser and, through Node.js, on servers as well.",
      "A promise represents a value that will be available later, and async functions await it.",
      "The fetch API returns a promise that resolves to a Response object.",
      "Node.js streams process data piece by piece instead of loading whole files into memory.",
      "Closures capture variables from the scope in which a function was created.",
      "Modules use import and export statements to share code between files.",
      "An unhandled promise rejection usually points to a missing catch block.",
      "TypeScript adds static types to JavaScript and compiles back to plain JavaScript.",
      "Event listeners react to clicks, key presses and network events without blocking the page.",
    ],
  },
  {
    key: "rust",
    stems: ["Rust Programming Language", "Rust Ownership and Borrowing", "Async Rust"],
    sites: ["doc.rust-lang.org", "github.com", "blog.rust-lang.org", "stackoverflow.com"],
    sentences: [
      "Rust guarantees memory safety without a garbage collector through ownership and borrowing.",
      "The borrow checker rejects programs where a reference could outlive the value it points to.",
      "Cargo builds the project, downloads crates and runs the tests.",
      "Traits describe shared behaviour, similar to interfaces in other languages.",
      "Async Rust relies on futures that an executor such as Tokio polls to completion.",
      "Pattern matching with match forces the programmer to handle every enum variant.",
      "Unsafe blocks opt out of some compiler checks and must be reviewed carefully.",
      "Error handling uses the Result type and the question mark operator.",
    ],
  },
  {
    key: "postgresql",
    stems: ["PostgreSQL", "PostgreSQL Indexes", "Database Query Tuning"],
    sites: ["postgresql.org", "stackoverflow.com", "github.com", "aws.amazon.com"],
    sentences: [
      "PostgreSQL is an open source relational database with strong standards compliance.",
      "A B-tree index speeds up equality and range queries on a column.",
      "EXPLAIN ANALYZE shows the query plan and the time spent in each node.",
      "Vacuum reclaims space left behind by updated and deleted rows.",
      "Transactions give atomicity, so either every statement commits or none does.",
      "JSONB columns store documents that can be indexed with GIN indexes.",
      "Connection pooling with PgBouncer keeps the number of backend processes small.",
      "Logical replication streams changes from one database to another.",
    ],
  },
  {
    key: "kubernetes",
    stems: ["Kubernetes", "Kubernetes Deployments", "Container Orchestration"],
    sites: ["kubernetes.io", "github.com", "cloud.google.com", "medium.com"],
    sentences: [
      "Kubernetes schedules containers onto a cluster of machines and restarts them when they fail.",
      "A deployment describes the desired number of pod replicas and rolls out new versions gradually.",
      "Services give a stable network address to a changing set of pods.",
      "Horizontal pod autoscaling adds replicas when CPU usage crosses a threshold.",
      "ConfigMaps and Secrets inject configuration into containers at run time.",
      "Helm charts package manifests so an application can be installed with one command.",
      "Liveness and readiness probes tell the cluster when a container is healthy.",
      "Namespaces separate teams and environments that share one cluster.",
    ],
  },
  {
    key: "machine-learning",
    stems: ["Machine Learning", "Neural Networks", "Artificial Intelligence Research"],
    sites: ["arxiv.org", "stanford.edu", "mit.edu", "github.com", "nature.com"],
    sentences: [
      "Machine learning models learn patterns from examples instead of following hand-written rules.",
      "A neural network adjusts millions of weights by gradient descent to reduce its error.",
      "Artificial intelligence systems now translate text, recognise speech and write code.",
      "Overfitting happens when a model memorises training data and fails on new data.",
      "Transformers use attention to relate every word in a sentence to every other word.",
      "Researchers hold out a test set to measure how well a model generalises.",
      "Reinforcement learning agents improve by trial and error guided by a reward signal.",
      "Large language models are trained on trillions of tokens of text.",
    ],
  },
  {
    key: "mars",
    stems: ["Mars Exploration", "Mars Rovers", "Human Missions to Mars"],
    sites: ["nasa.gov", "esa.int", "en.wikipedia.org", "space.com"],
    sentences: [
      "Mars rovers drill into rocks and analyse the samples with onboard laboratories.",
      "The red planet has a thin carbon dioxide atmosphere and surface temperatures far below freezing.",
      "Evidence of ancient river deltas suggests Mars once had liquid water.",
      "A human mission to Mars would take about seven months each way with current rockets.",
      "Dust storms can cover the whole planet and block sunlight for weeks.",
      "The Ingenuity helicopter proved that powered flight is possible in the thin Martian air.",
      "Sample return missions plan to bring Martian rocks back to Earth laboratories.",
      "Orbiters relay data from the surface and map the planet in high resolution.",
    ],
  },
  {
    key: "coral-reefs",
    stems: ["Coral Reefs", "Ocean Acidification", "Marine Biodiversity"],
    sites: ["noaa.gov", "nature.com", "en.wikipedia.org", "bbc.co.uk"],
    sentences: [
      "Coral reefs cover less than one percent of the ocean floor but shelter a quarter of marine species.",
      "Bleaching occurs when warm water forces corals to expel the algae that feed them.",
      "Ocean acidification makes it harder for corals and shellfish to build their skeletons.",
      "Marine protected areas let fish populations recover and spill over into fished waters.",
      "Scientists grow coral fragments in nurseries and replant them on damaged reefs.",
      "Runoff from farms carries nutrients that fuel algae blooms on reefs.",
      "The Great Barrier Reef suffered mass bleaching events in several recent summers.",
    ],
  },
  {
    key: "housing",
    stems: ["Housing Market", "Home Prices and Mortgages", "Affordable Housing Policy"],
    sites: ["reuters.com", "nytimes.com", "worldbank.org", "census.gov", "theguardian.com"],
    sentences: [
      "House prices rose faster than wages in most large cities over the past decade.",
      "Higher mortgage rates reduce how much buyers can borrow to purchase a home.",
      "First-time buyers struggle to save a deposit while rents keep climbing.",
      "Zoning rules that allow only detached houses limit the supply of new dwellings.",
      "Affordable housing programs subsidise rents for low-income households.",
      "Construction costs for a new residence increased sharply after 2020.",
      "Some cities tax empty homes to push owners to rent them out.",
      "Economists expect the market to cool as fewer people can afford to buy.",
    ],
  },
  {
    key: "inflation",
    stems: ["Inflation", "Interest Rates and Central Banks", "Cost of Living"],
    sites: ["imf.org", "worldbank.org", "federalreserve.gov", "reuters.com", "ecb.europa.eu"],
    sentences: [
      "Inflation measures how fast the general level of prices rises over time.",
      "Central banks raise interest rates to cool demand when inflation runs above target.",
      "Energy and food prices drove most of the recent jump in the cost of living.",
      "Wages that lag behind prices reduce the purchasing power of households.",
      "The consumer price index tracks a basket of goods that a typical family buys.",
      "Expectations matter: if people expect higher prices, they demand higher pay.",
      "Core inflation excludes volatile food and energy to show the underlying trend.",
      "Governments index pensions to inflation so retirees keep their real income.",
    ],
  },
  {
    key: "remote-work",
    stems: ["Remote Work", "Hybrid Work Policies", "The Future of Employment"],
    sites: ["bls.gov", "nytimes.com", "hbr.org", "medium.com"],
    sentences: [
      "Remote work grew sharply in 2020 and settled at a hybrid pattern for many office jobs.",
      "Employees value the time saved by not commuting, surveys show.",
      "Managers worry that junior staff learn less when the team rarely meets in person.",
      "Video calls, shared documents and chat tools replaced many meetings.",
      "Some companies pay differently depending on where a remote employee lives.",
      "A career in software or finance is now often possible from a small town.",
      "Office landlords face higher vacancy as firms shrink their floor space.",
      "Labour statistics show remote jobs concentrated in higher-paid occupations.",
    ],
  },
  {
    key: "early-education",
    stems: ["Early Childhood Education", "Preschool Programs", "Learning Through Play"],
    sites: ["ed.gov", "unicef.org", "ox.ac.uk", "theguardian.com"],
    sentences: [
      "Children who attend quality preschool arrive at school with stronger language skills.",
      "Play-based learning builds curiosity, self-control and social skills in young kids.",
      "Small group sizes and trained teachers matter more than expensive buildings.",
      "Reading aloud every day expands a child's vocabulary.",
      "Public funding for early education pays back through better long-term outcomes, studies find.",
      "Parents often struggle to find affordable childcare near home or work.",
      "Research links early numeracy games to later success in mathematics.",
    ],
  },
  {
    key: "coffee",
    stems: ["Coffee", "Coffee Brewing Methods", "Espresso"],
    sites: ["en.wikipedia.org", "nytimes.com", "seriouseats.com", "bbc.co.uk"],
    sentences: [
      "Coffee beans are the roasted seeds of a cherry-like fruit grown in the tropics.",
      "Espresso forces hot water through finely ground coffee at about nine bars of pressure.",
      "A pour-over brewer gives control over water temperature and extraction time.",
      "Arabica beans taste sweeter and more acidic than robusta beans.",
      "Light roasts keep fruity flavours while dark roasts taste of chocolate and smoke.",
      "Grind size should match the brewing method: coarse for a French press, fine for espresso.",
      "Caffeine blocks adenosine receptors, which is why coffee keeps people awake.",
    ],
  },
  {
    key: "bread-baking",
    stems: ["Bread Baking", "Sourdough Starters", "Home Baking"],
    sites: ["seriouseats.com", "bbc.co.uk", "kingarthurbaking.com", "en.wikipedia.org"],
    sentences: [
      "A sourdough starter is a culture of wild yeast and lactic acid bacteria fed with flour and water.",
      "Kneading develops gluten, which traps gas and gives bread its structure.",
      "Bakers measure hydration as the weight of water divided by the weight of flour.",
      "A long cold proof in the fridge deepens flavour and makes scoring easier.",
      "Baking in a covered pot traps steam so the crust can expand before it sets.",
      "Whole wheat flour absorbs more water than white flour.",
      "The loaf is done when it sounds hollow and reads about 96 degrees inside.",
    ],
  },
  {
    key: "marathon",
    stems: ["Marathon Training", "Running for Beginners", "Endurance Training Plans"],
    sites: ["runnersworld.com", "nhs.uk", "nytimes.com", "medium.com"],
    sentences: [
      "Most marathon plans last sixteen to twenty weeks and build the long run gradually.",
      "Easy runs at a conversational pace make up most of an endurance athlete's week.",
      "Carbohydrate loading in the final days tops up glycogen stores before race day.",
      "Increasing weekly distance by more than ten percent raises the risk of injury.",
      "A taper reduces training volume so the body can recover before the race.",
      "Beginners often alternate running and walking to build stamina safely.",
      "Good shoes and a proper warm-up help prevent shin splints.",
    ],
  },
  {
    key: "cybersecurity",
    stems: ["Password Security", "Phishing Attacks", "Multi-Factor Authentication"],
    sites: ["cisa.gov", "nist.gov", "owasp.org", "github.com", "krebsonsecurity.com"],
    sentences: [
      "Long passphrases are harder to crack than short passwords with symbols.",
      "A password manager generates and stores a unique password for every site.",
      "Phishing emails trick users into entering credentials on a fake login page.",
      "Multi-factor authentication blocks most account takeovers even when a password leaks.",
      "Attackers exploit an unpatched defect within days of its public disclosure.",
      "Security teams patch servers quickly and monitor logs for unusual sign-ins.",
      "Hardware security keys resist phishing because they check the website's origin.",
      "Breach notification laws require companies to tell customers when data is stolen.",
    ],
  },
  {
    key: "accessibility",
    stems: ["Web Accessibility", "WCAG Guidelines", "Accessible Forms"],
    sites: ["w3.org", "developer.mozilla.org", "gov.uk", "a11yproject.com"],
    sentences: [
      "Web accessibility means people with disabilities can perceive, operate and understand a site.",
      "Every image needs alternative text that describes its purpose.",
      "Screen readers announce headings, links and form labels to blind users.",
      "Colour contrast of at least 4.5 to 1 keeps text readable for people with low vision.",
      "All functionality should work with a keyboard alone, without a mouse.",
      "Form fields need visible labels and clear error messages.",
      "The Web Content Accessibility Guidelines define three levels of conformance.",
    ],
  },
  {
    key: "bees",
    stems: ["Honey Bees", "Pollinator Decline", "Beekeeping"],
    sites: ["usda.gov", "en.wikipedia.org", "nature.com", "theguardian.com"],
    sentences: [
      "Bees pollinate about a third of the crops that people eat.",
      "Colony collapse disorder leaves hives with a queen but almost no worker bees.",
      "Neonicotinoid pesticides impair the navigation of foraging bees.",
      "Wildflower strips along fields give pollinators food throughout the season.",
      "Beekeepers inspect frames for mites and disease every few weeks in summer.",
      "Bumblebees can fly in colder weather than honey bees.",
      "Honey is made from nectar that bees concentrate by evaporating water.",
    ],
  },
  {
    key: "roman-history",
    stems: ["Roman Empire", "Fall of Rome", "Roman Engineering"],
    sites: ["en.wikipedia.org", "britannica.com", "ox.ac.uk", "bbc.co.uk"],
    sentences: [
      "The Roman Empire at its height stretched from Britain to Mesopotamia.",
      "Roman engineers built aqueducts that carried water across valleys on stone arches.",
      "Concrete made with volcanic ash let the Romans build the dome of the Pantheon.",
      "Historians still debate why the western empire fell in the fifth century.",
      "Latin, the language of Rome, evolved into Italian, Spanish, French and Portuguese.",
      "A network of paved roads connected the provinces to the capital.",
      "The Senate lost real power once Augustus became the first emperor.",
    ],
  },
];

interface Angle {
  label: string;
  filetypes: Filetype[];
  section: string;
  intro: (stem: string) => string;
}

const ANGLES: Angle[] = [
  { label: "Overview", filetypes: ["html"], section: "wiki", intro: (s) => `This page gives an overview of ${s.toLowerCase()}.` },
  { label: "A Beginner's Guide", filetypes: ["html"], section: "guides", intro: (s) => `New to ${s.toLowerCase()}? Start with the basics below.` },
  { label: "Frequently Asked Questions", filetypes: ["html"], section: "faq", intro: (s) => `Answers to common questions about ${s.toLowerCase()}.` },
  { label: "Tutorial", filetypes: ["html"], section: "tutorials", intro: (s) => `A step-by-step tutorial on ${s.toLowerCase()}.` },
  { label: "News and Analysis", filetypes: ["html"], section: "news", intro: (s) => `Latest reporting on ${s.toLowerCase()}.` },
  { label: "Case Study", filetypes: ["html"], section: "case-studies", intro: (s) => `A case study examining ${s.toLowerCase()} in practice.` },
  { label: "Annual Report", filetypes: ["pdf"], section: "reports", intro: (s) => `This annual report reviews developments in ${s.toLowerCase()}.` },
  { label: "Research Paper", filetypes: ["pdf"], section: "research", intro: (s) => `Abstract: we study ${s.toLowerCase()} using new data.` },
  { label: "Technical Report", filetypes: ["pdf"], section: "publications", intro: (s) => `Technical report on ${s.toLowerCase()}.` },
  { label: "Policy Brief", filetypes: ["docx", "doc"], section: "policy", intro: (s) => `Policy brief: options for ${s.toLowerCase()}.` },
  { label: "Data Tables", filetypes: ["xlsx", "xls"], section: "data", intro: (s) => `Data tables with statistics on ${s.toLowerCase()}.` },
  { label: "Presentation Slides", filetypes: ["pptx", "ppt"], section: "slides", intro: (s) => `Slides from a talk about ${s.toLowerCase()}.` },
];

const GENERIC = [
  "The figures in this document were last reviewed by the editorial team.",
  "Readers can find further references at the end of the page.",
  "Comments and corrections are welcome through the contact form.",
  "Earlier versions of this material were published in print.",
  "Related resources are listed in the sidebar.",
];

const COUNTRY_BY_SITE: Record<string, string> = {
  "bbc.co.uk": "GB", "nhs.uk": "GB", "gov.uk": "GB", "ox.ac.uk": "GB", "theguardian.com": "GB",
  "ec.europa.eu": "EU", "ecb.europa.eu": "EU", "esa.int": "EU",
  "energy.gov": "US", "nrel.gov": "US", "noaa.gov": "US", "epa.gov": "US", "cdc.gov": "US", "nih.gov": "US",
  "nasa.gov": "US", "census.gov": "US", "bls.gov": "US", "ed.gov": "US", "federalreserve.gov": "US", "usda.gov": "US",
  "cisa.gov": "US", "nist.gov": "US", "nytimes.com": "US", "mit.edu": "US", "stanford.edu": "US", "mayoclinic.org": "US",
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

const slugify = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");

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
      const title = angle.label === "Annual Report" || angle.label === "Data Tables" ? `${stem}: ${angle.label} ${year}` : `${stem}: ${angle.label}`;
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
