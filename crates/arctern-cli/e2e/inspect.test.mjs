// Browser tests of `arctern inspect`: Debian's Chromium, driven by playwright-core (which
// downloads no browser), under Node's test runner. Run by scripts/inspect-e2e.sh, which
// sets ARCTERN (the binary), ARCTERN_FIXTURE (the inspect_fixture example), CHROMIUM and,
// to refresh the README's screenshots, SHOTS (a folder).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { createInterface } from "node:readline";
import { join } from "node:path";
import { chromium } from "playwright-core";

const ARCTERN = process.env.ARCTERN;
const FIXTURE = process.env.ARCTERN_FIXTURE;
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const SHOTS = process.env.SHOTS || "";
const children = [];

// Starts a program that prints {"url": …} as its first line; returns that URL.
function started(program, args) {
  const child = spawn(program, args, { stdio: ["ignore", "pipe", "ignore"] });
  children.push(child);
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.once("line", (line) => resolve(JSON.parse(line).url));
    child.once("exit", (code) => reject(new Error(`${program} exited (${code})`)));
  });
}

let browser, demo, fixture, inspectDemo, inspectFixture;

before(async () => {
  assert.ok(ARCTERN && FIXTURE, "ARCTERN and ARCTERN_FIXTURE are set");
  demo = await started(ARCTERN, ["serve", "--port", "0", "--output", "json"]);
  fixture = await started(FIXTURE, []);
  inspectDemo = await started(ARCTERN, ["inspect", demo, "--no-open", "--output", "json"]);
  inspectFixture = await started(ARCTERN, ["inspect", fixture, "--no-open", "--output", "json"]);
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
});

after(async () => {
  if (browser) await browser.close();
  for (const c of children) c.kill();
});

// A fresh page on `url`, collecting what it says in the console and CSP reports.
async function open(url) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  const problems = [];
  page.on("console", (m) => { if (m.type() === "error") problems.push(m.text()); });
  page.on("pageerror", (e) => problems.push(String(e)));
  const requests = [];
  page.on("request", (r) => requests.push(r));
  await page.goto(url);
  await page.waitForFunction(() => document.getElementById("target").textContent !== "");
  return { context, page, problems, requests };
}

async function shot(page, name) {
  if (SHOTS) await page.screenshot({ path: join(SHOTS, name), fullPage: false });
}

test("the token leaves the address bar, goes as a header, and no cookie is set", async () => {
  const { context, page, requests } = await open(inspectDemo);
  assert.ok(!page.url().includes("#k="), page.url());
  assert.ok(!page.url().includes(inspectDemo.split("#k=")[1]));
  assert.deepEqual(await context.cookies(), []);
  const api = requests.filter((r) => new URL(r.url()).pathname.startsWith("/api/"));
  assert.ok(api.length > 0);
  for (const r of api) assert.match(r.headers()["authorization"] || "", /^Bearer [0-9a-f]{64}$/);
  // A reload keeps working (the token is in this tab's sessionStorage, not in the URL).
  await page.reload();
  await page.waitForFunction(() => document.getElementById("target").textContent !== "");
  assert.equal(await page.locator("#notice").isHidden(), true);
  await context.close();
});

test("the tools are listed and a form refuses a bad value with the CLI's message", async () => {
  const { context, page } = await open(inspectDemo);
  await page.click('nav button[data-view="tools"]');
  await page.locator('.item[data-name="book_hotel"]').waitFor();
  await page.fill("#view-tools input[type=search]", "slow");
  assert.equal(await page.locator("#view-tools .item").count(), 1);
  await page.click('.item[data-name="slow_count"]');
  await page.fill("#arg-steps", "many");
  await page.click("#view-tools button.primary");
  const error = page.locator("#view-tools .form-error");
  await error.filter({ hasText: "steps" }).waitFor();
  let cli;
  try {
    execFileSync(ARCTERN, ["call", demo, "slow_count", "--arg", "steps=many", "--output", "json"], { stdio: ["ignore", "pipe", "ignore"] });
  } catch (e) {
    cli = JSON.parse(e.stdout.toString()).error.message;
  }
  assert.equal(await error.textContent(), cli);
  await page.fill("#view-tools input[type=search]", "");
  await page.click('.item[data-name="book_hotel"]');
  await shot(page, "inspect-tools.png");
  await context.close();
});

test("a three-round flow answered in the page is one flow with its rounds", async () => {
  const { context, page } = await open(inspectFixture);
  await page.click('nav button[data-view="tools"]');
  await page.click('.item[data-name="plan_trip"]');
  await page.fill("#arg-traveller", "Ada");
  await page.click("#view-tools button.primary");
  const card = page.locator(".card");
  await card.filter({ hasText: "Which city?" }).waitFor();
  await page.waitForTimeout(300); // a person thinking: the human wait
  await card.locator("select").selectOption("Oslo");
  await shot(page, "inspect-question.png");
  await card.locator(".answer-accept").click();
  await card.filter({ hasText: "Which hotel in Oslo?" }).waitFor();
  await card.locator("select").selectOption("osl-aurora");
  await card.locator(".answer-accept").click();
  const flow = page.locator(".flow").first();
  await flow.locator(".status-complete").waitFor();
  assert.equal(await page.locator(".flow").count(), 1, "one flow");
  const rounds = flow.locator("tr.round");
  assert.equal(await rounds.count(), 3);
  const types = await flow.locator(".result-type").allTextContents();
  assert.deepEqual(types, ["input_required", "input_required", "complete"]);
  const ids = await flow.locator(".round-id").allTextContents();
  assert.equal(new Set(ids).size, 3, `distinct ids: ${ids}`);
  const received = await flow.locator(".state-received").allTextContents();
  for (const s of received.slice(0, 2)) assert.match(s, /^[1-9]\d* B · [0-9a-f]{8}$/);
  const sent = await flow.locator(".state-sent").allTextContents();
  assert.deepEqual(sent.slice(1), received.slice(0, 2), "each state went back as it came");
  const waits = await flow.locator(".human-wait").allTextContents();
  assert.ok(parseInt(waits[0], 10) >= 300, `human wait ${waits[0]}`);
  assert.equal(await flow.locator(".result-text").textContent(), "Ada stays at osl-aurora in Oslo.");
  const command = await flow.locator(".command").textContent();
  assert.match(command, /--answer 'city=\{"city":"Oslo"\}' --answer 'hotel=\{"hotel":"osl-aurora"\}'/);
  await shot(page, "inspect-timeline.png");
  await context.close();
});

test("a hostile server's markup and javascript: URLs execute nothing", async () => {
  const { context, page, problems } = await open(inspectFixture);
  const pwned = () => page.evaluate(() => window.__pwned);
  // Connection: title and instructions.
  assert.match(await page.locator(".instructions").textContent(), /<img src=x onerror=/);
  await page.click('nav button[data-view="tools"]');
  await page.click('.item[data-name="probe"]');
  assert.match(await page.locator("#view-tools .panel p").textContent(), /<script>window.__pwned='description'<\/script>/);
  await page.click("#view-tools button.primary");
  const card = page.locator(".card");
  await card.filter({ hasText: "Open this <b>page</b>" }).waitFor();
  assert.match(await card.locator(".url").textContent(), /javascript:window.__pwned='url'/);
  assert.equal(await card.locator(".open-url").isDisabled(), true, "a javascript: URL cannot be opened");
  assert.equal(await card.locator("input[type=checkbox]").count(), 0);
  await card.locator(".answer-accept").click();
  const flow = page.locator(".flow").first();
  await flow.locator(".status-complete").waitFor();
  assert.match(await flow.locator(".result-text").textContent(), /<script>window.__pwned='result'<\/script>/);
  assert.equal(await page.locator("#view-timeline img, #view-timeline a[href], #view-timeline script").count(), 0);
  await page.waitForTimeout(200);
  assert.equal(await pwned(), undefined, "no payload ran");
  assert.deepEqual(problems.filter((p) => /Content Security Policy|Refused/.test(p)), [], "no CSP violation of the page's own");
  await context.close();
});
