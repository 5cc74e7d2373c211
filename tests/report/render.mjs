// Opens dtsim HTML reports in headless Chromium (Debian's, driven by playwright-core) and checks that each renders:
// no console error or page error, every figure an SVG with marks, the expected figures present, each axis titled with
// its unit. Saves a screenshot of each page beside it (NAME.png).
//   node render.mjs NODE_MODULES CHROMIUM EXPECTATIONS.json   (NODE_MODULES: BUILD/report/node_modules)
// EXPECTATIONS: [{"file": "/abs/run.html", "title": "dtsim run: NAME", "figures": {"breakdown": [["time per
// iteration (ms)"], 3], ...}}, ...]: each figure with the axis titles it must show and its number of data marks (bars,
// points, lines, labels, rules; -1: at least one). Prints one line per page; exits 1 on any failure.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [modules, executablePath, expectationsFile] = process.argv.slice(2);
const { chromium } = await import(join(modules, "playwright-core", "index.mjs"));
const expectations = JSON.parse(readFileSync(expectationsFile, "utf8"));
// The flags a closed network needs: no background connections, no first-run, no sandbox as root.
const browser = await chromium.launch({
  executablePath,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-quic"],
});
let failures = 0;
for (const page_case of expectations) {
  const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
  const problems = [];
  const requests = [];
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  // A self-contained report fetches nothing: any request past the file itself is a failure.
  page.on("request", (r) => { if (!r.url().startsWith("file://")) requests.push(r.url()); });
  await page.goto("file://" + page_case.file);
  try {
    await page.waitForSelector("body[data-rendered]", { timeout: 20000 });
  } catch {
    problems.push("the figures did not finish rendering in 20 s");
  }
  const found = await page.evaluate(() => {
    const out = {};
    for (const section of document.querySelectorAll("section.figure")) {
      const svg = section.querySelector("svg");
      out[section.dataset.figure] = {
        svg: !!svg,
        // data marks only (Vega gives them role-mark; axes and legends have their own roles)
        marks: svg ? svg.querySelectorAll("g.role-mark > path, g.role-mark > line, g.role-mark > text").length : 0,
        titles: svg ? [...svg.querySelectorAll("g.role-axis-title text")].map((t) => t.textContent) : [],
        error: section.querySelector("p.error")?.textContent ?? null,
      };
    }
    return { figures: out, title: document.title, rendered: document.body.dataset.rendered };
  });
  // What the page says in words, beside NAME.html as NAME.dom.json, for the check that the text, the CSV, the JSON and
  // the page show the same figures (agree.py): its tables' cells, its summary paragraphs and its figures' axis titles.
  const said = await page.evaluate(() => ({
    tables: Object.fromEntries([...document.querySelectorAll("section.table")].map((s) => [s.dataset.table, {
      header: [...s.querySelectorAll("th")].map((c) => c.textContent),
      rows: [...s.querySelectorAll("tr")].slice(1).map((r) => [...r.querySelectorAll("td")].map((c) => c.textContent)),
    }])),
    summaries: [...document.querySelectorAll("p.summary")].map((p) => p.textContent),
  }));
  writeFileSync(page_case.file.replace(/\.html$/, ".dom.json"), JSON.stringify({ ...said, figures: found.figures }, null, 1));
  if (!found.title.startsWith(page_case.title)) problems.push(`title "${found.title}", expected "${page_case.title}..."`);
  if (found.rendered !== String(Object.keys(found.figures).length))
    problems.push(`rendered ${found.rendered} of ${Object.keys(found.figures).length} figures`);
  for (const [name, [titles, marks]] of Object.entries(page_case.figures)) {
    const f = found.figures[name];
    if (!f) { problems.push(`figure "${name}" is missing`); continue; }
    if (f.error) problems.push(`figure "${name}": ${f.error}`);
    if (!f.svg || f.marks === 0) problems.push(`figure "${name}" has no marks`);
    else if (marks >= 0 && f.marks !== marks) problems.push(`figure "${name}" has ${f.marks} marks, expected ${marks}`);
    for (const t of titles) if (!f.titles.includes(t)) problems.push(`figure "${name}" lacks the axis "${t}" (has ${JSON.stringify(f.titles)})`);
  }
  for (const r of requests) problems.push(`fetched ${r}`);
  await page.screenshot({ path: page_case.file.replace(/\.html$/, ".png"), fullPage: true });
  console.log(`${problems.length ? "FAIL" : "ok  "} ${page_case.file}: ${Object.keys(found.figures).length} figures ` +
              `(${Object.entries(found.figures).map(([k, f]) => `${k} ${f.marks} marks`).join(", ")})`);
  for (const p of problems) console.log("     " + p);
  failures += problems.length ? 1 : 0;
  await page.close();
}
await browser.close();
process.exit(failures ? 1 : 0);
