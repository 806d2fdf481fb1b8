// The dashboard in a real browser (Debian's chromium, driven by
// playwright-core), against a real API and controlplane that the Rust test
// crates/levers9-cli/tests/dashboard.rs started. It reads:
//   WEB_URL   the web app (built with NEXT_PUBLIC_API_BASE=API_BASE)
//   API_BASE  the API, as the app was built for it
//   TASK_ID   a task the SDK ran; MARKER  what it printed; STUB_ID  its stub
//   FAIL_TASK_ID  a task that failed both of its attempts
//   VOLUME    a volume made with the CLI, holding notes/hello.txt = VOLUME_TEXT
//   CHROMIUM  the browser (default /usr/bin/chromium)
// Exits non-zero on the first failed check, saying which.

import http from "node:http";
import { chromium } from "playwright-core";

const WEB = process.env.WEB_URL;
const API_BASE = process.env.API_BASE;
const TASK_ID = process.env.TASK_ID;
const MARKER = process.env.MARKER;
const STUB_ID = process.env.STUB_ID;
const FAIL_TASK_ID = process.env.FAIL_TASK_ID;
const VOLUME = process.env.VOLUME;
const VOLUME_TEXT = process.env.VOLUME_TEXT;
const env = { WEB_URL: WEB, API_BASE, TASK_ID, MARKER, STUB_ID, FAIL_TASK_ID, VOLUME, VOLUME_TEXT };
for (const [name, value] of Object.entries(env)) {
  if (!value) throw new Error(`${name} is not set: run this through crates/levers9-cli/tests/dashboard.rs`);
}
const api = new URL(API_BASE);
const PAGES = [
  "/",
  "/tasks",
  `/tasks/${TASK_ID}`,
  "/apps",
  "/deployments",
  `/stubs/${STUB_ID}`,
  "/containers",
  "/workers",
  "/volumes",
  `/volumes/${VOLUME}`,
  `/volumes/${VOLUME}?path=notes`,
  "/secrets",
  "/tokens",
  "/signin",
];

let passed = 0;
function check(ok, what) {
  if (!ok) throw new Error(`FAILED: ${what}`);
  passed += 1;
  console.log(`ok - ${what}`);
}

/** The headers src/lib/csp.ts promises, with the API from the build argument. */
function checkHeaders(path, headers) {
  check(headers["x-content-type-options"] === "nosniff", `${path}: nosniff`);
  check(headers["referrer-policy"] === "strict-origin-when-cross-origin", `${path}: referrer policy`);
  check(headers["x-frame-options"] === "SAMEORIGIN", `${path}: X-Frame-Options`);
  const enforced = headers["content-security-policy"] ?? "";
  for (const part of ["object-src 'none'", "base-uri 'self'", "frame-ancestors 'self'", `form-action 'self' http://${api.host}`]) {
    check(enforced.includes(part), `${path}: enforced policy has ${part}`);
  }
  const full = headers["content-security-policy-report-only"] ?? "";
  check(full.includes(`connect-src 'self' http://${api.host} ws://${api.host}`), `${path}: full policy names the API over http and ws`);
  check(full.includes("report-uri /csp-report"), `${path}: full policy reports to /csp-report`);
}

/** A console message of the browser blocking something under the enforced policy
 * (report-only violations say "report-only" and "no further action"). */
function blockedByPolicy(text) {
  return /Content Security Policy|X-Frame-Options/.test(text) && /blocked|Refused/.test(text) && !/report-only|Report Only/i.test(text);
}

/** Another origin: a page that frames the dashboard, and an image the full policy does not allow. */
function otherOrigin() {
  const server = http.createServer((req, res) => {
    if (req.url === "/pixel.svg") {
      server.pixelServed = true;
      res.writeHead(200, { "content-type": "image/svg+xml" });
      res.end('<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>');
      return;
    }
    res.writeHead(200, { "content-type": "text/html" });
    res.end(`<!doctype html><title>framer</title><iframe id="f" src="${WEB}/tasks" width="600" height="300"></iframe>`);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const other = await otherOrigin();
const otherUrl = `http://127.0.0.1:${other.address().port}`;
try {
  const context = await browser.newContext();
  const page = await context.newPage();
  const enforcedViolations = [];
  page.on("console", (m) => {
    if (blockedByPolicy(m.text())) enforcedViolations.push(m.text());
  });

  // Signed out, every page leads to the sign-in page.
  await page.goto(`${WEB}/tasks`);
  await page.waitForURL(`${WEB}/signin`);
  await page.getByText("Development sign-in is on").waitFor();
  check(true, "a signed-out visit lands on /signin, which warns about the development sign-in");

  await page.fill('input[name="email"]', "ada@example.com");
  await page.click('button[type="submit"]');
  await page.waitForURL(`${WEB}/`);
  await page.getByText("ada@example.com").waitFor();
  await page.getByText("Development sign-in: nobody checked").waitFor();
  check(true, "development sign-in lands on the overview, signed in, with the warning");

  for (const path of PAGES) {
    const response = await page.goto(`${WEB}${path}`);
    check(response.ok(), `${path}: ${response.status()}`);
    checkHeaders(path, response.headers());
  }

  // An image from another origin breaks the full policy: reported, not blocked.
  const loaded = await page.evaluate(
    (src) =>
      new Promise((resolve) => {
        const img = new Image();
        img.onload = () => resolve(true);
        img.onerror = () => resolve(false);
        img.src = src;
        document.body.appendChild(img);
      }),
    `${otherUrl}/pixel.svg`,
  );
  check(loaded && other.pixelServed, "an image the full policy forbids still loads (report-only)");

  // The app's own origin may frame it (so the check below can tell a block from a slow load)...
  const sameOrigin = await page.evaluate(
    (src) =>
      new Promise((resolve) => {
        const frame = document.createElement("iframe");
        frame.onload = () => resolve(frame.contentDocument?.body?.innerText ?? "");
        frame.src = src;
        document.body.appendChild(frame);
      }),
    `${WEB}/apps`,
  );
  check(String(sameOrigin).includes("levers9"), "the app's own origin may frame it");

  // ...another origin may not: the browser refuses and says so.
  const framer = await context.newPage();
  const refusals = [];
  framer.on("console", (m) => blockedByPolicy(m.text()) && /frame/i.test(m.text()) && refusals.push(m.text()));
  await framer.goto(otherUrl);
  for (let i = 0; i < 100 && refusals.length === 0; i++) await framer.waitForTimeout(100);
  check(refusals.length > 0, "the browser refuses to let another origin frame the app");
  const child = framer.frames().find((f) => f !== framer.mainFrame());
  const framedText = child ? await child.evaluate(() => document.body?.innerText ?? "").catch(() => "") : "";
  check(!framedText.includes("levers9"), `another origin's frame shows nothing of the app (it is at ${child?.url()})`);

  // The task the SDK ran, on the tasks page and in detail with its log.
  await page.goto(`${WEB}/tasks`);
  await page.getByRole("link", { name: TASK_ID }).click();
  await page.waitForURL(`${WEB}/tasks/${TASK_ID}`);
  await page.locator('[data-testid="task-state"]', { hasText: "complete" }).waitFor({ timeout: 30_000 });
  check(true, "the task's page shows it complete");
  await page.locator('[data-testid="task-events"]', { hasText: "— complete" }).waitFor({ timeout: 30_000 });
  check(true, "the task's page shows its outcome from the task's own events");
  await page.locator('[data-testid="log"]', { hasText: MARKER }).waitFor({ timeout: 30_000 });
  check(true, "the task's page shows what the function printed");
  await page.locator('[data-testid="attempts"] tbody tr', { hasText: "complete" }).waitFor();
  check(true, "the task's page lists its attempt, complete");

  // A task that failed twice: both attempts, each with how it ended and why.
  await page.goto(`${WEB}/tasks/${FAIL_TASK_ID}`);
  const attempts = page.locator('[data-testid="attempts"] tbody tr');
  await attempts.nth(1).waitFor({ timeout: 30_000 });
  check((await attempts.count()) === 2, "the failed task's page lists its two attempts");
  const first = await attempts.nth(0).innerText();
  const second = await attempts.nth(1).innerText();
  check(/\bretried\b/.test(first) && first.includes("dashboard-attempt-failed"), `the first attempt was retried, saying why: ${first}`);
  check(/\berror\b/.test(second) && second.includes("dashboard-attempt-failed"), `the second attempt ended the task in error: ${second}`);

  // Apps: the function's stub under the file it was defined in, and its page.
  await page.goto(`${WEB}/apps`);
  const app = page.locator('[data-testid="app"]', { hasText: "dashboard_app.py" });
  await app.locator("tr", { hasText: "greet" }).getByRole("link", { name: STUB_ID }).click();
  await page.waitForURL(`${WEB}/stubs/${STUB_ID}`);
  await page.locator('[data-testid="stub"]', { hasText: "dashboard_app.py" }).waitFor();
  await page.locator('[data-testid="stub-tasks"]').getByRole("link", { name: TASK_ID }).waitFor();
  check(true, "the apps page lists the function's stub under its file, whose page lists the task");

  // Deployments: the deployed app's function, linking to its stub.
  await page.goto(`${WEB}/deployments`);
  const deployed = page.locator('[data-testid="deployments"] tr', { hasText: "dashboard-app" });
  await deployed.getByRole("link", { name: STUB_ID }).waitFor();
  const deployedRow = await deployed.innerText();
  check(/\bgreet\b/.test(deployedRow) && /\b1\b/.test(deployedRow), `the deployments page lists the app's function at version 1: ${deployedRow}`);
  await deployed.getByRole("link", { name: STUB_ID }).click();
  await page.waitForURL(`${WEB}/stubs/${STUB_ID}`);
  check(true, "a deployed function links to its stub's page");

  // Volumes: the CLI's volume, browsed down to its file, read through the API.
  await page.goto(`${WEB}/volumes`);
  await page.getByRole("link", { name: VOLUME, exact: true }).click();
  await page.waitForURL(`${WEB}/volumes/${VOLUME}`);
  await page.getByRole("link", { name: "notes/" }).click();
  const file = page.getByRole("link", { name: "hello.txt" });
  await file.waitFor();
  const href = await file.getAttribute("href");
  check(href.startsWith(`${API_BASE}/volumes/`), `the file links to the API, not storage: ${href}`);
  const download = await page.request.get(href);
  check(download.ok() && (await download.text()) === VOLUME_TEXT, `the file's bytes come through the API (${download.status()})`);
  check(/^attachment/.test(download.headers()["content-disposition"] ?? ""), "the file comes as an attachment");

  // Workers and pools: the test's runc worker, ready, in the pool "default".
  await page.goto(`${WEB}/workers`);
  await page.locator("tr", { hasText: "runc" }).filter({ hasText: "ready" }).filter({ hasText: "default" }).waitFor();
  check(true, "the workers page lists the ready runc worker of the pool default");

  // Tokens: made and revoked from the page, which sends the CSRF token.
  await page.goto(`${WEB}/tokens`);
  await page.fill('input[placeholder="description"]', "made-in-the-browser");
  await page.getByRole("button", { name: "Create a workspace token" }).click();
  await page.getByText("shown this once").waitFor();
  const row = page.locator("tr", { hasText: "made-in-the-browser" });
  await row.getByRole("button", { name: "Revoke" }).click();
  await row.getByRole("button", { name: "Revoke" }).waitFor({ state: "detached" });
  check(true, "a workspace token is created and revoked from the tokens page");

  // /csp-report bounds what it takes and how much it logs.
  const big = await fetch(`${WEB}/csp-report`, {
    method: "POST",
    headers: { "content-type": "application/csp-report" },
    body: JSON.stringify({ "csp-report": { "blocked-uri": "x".repeat(20_000) } }),
  });
  check(big.status === 413, `an oversized report is refused (${big.status})`);
  const statuses = [];
  for (let i = 0; i < 70; i++) {
    const r = await fetch(`${WEB}/csp-report`, {
      method: "POST",
      headers: { "content-type": "application/csp-report" },
      body: JSON.stringify({ "csp-report": { disposition: "report", "effective-directive": "img-src", "blocked-uri": `flood-${i}` } }),
    });
    statuses.push(r.status);
  }
  check(statuses.includes(429), "a flood of reports is rate limited");

  check(enforcedViolations.length === 0, `nothing was blocked by the enforced policy: ${enforcedViolations.join(" | ")}`);
  console.log(`browser: ${passed} passed, 0 failed`);
} finally {
  other.close();
  await browser.close();
}
