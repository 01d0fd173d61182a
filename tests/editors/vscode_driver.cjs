// Drives real VS Code (code-server's workbench) in headless Chromium through puppeteer-core:
// open a buggy kernel, save it, check the squiggle line, the Problems count, the hover's
// interleaving, apply the quick fix, save, and check that the squiggle is gone.
// Run by tests/editors/test_vscode.py with node 24 and NODE_PATH pointing at puppeteer-core;
// one JSON argument: {url, file, line, column, fixTitle, fixCheck, artifacts, chromium}.
// Exit status 0 when every check passed; the steps and their timings are printed as they run.
const fs = require("fs");
const path = require("path");
const puppeteer = require("puppeteer-core");

const cfg = JSON.parse(process.argv[2]);
const cfgCode = () => cfg.code;
const T0 = Date.now();
const WAIT = 90000; // ms for any one condition (the first SPIN check and extension start included)
const log = (msg) => console.log(`[${((Date.now() - T0) / 1000).toFixed(1)} s] ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function shot(page, name) {
  const file = path.join(cfg.artifacts, `${name}.png`);
  await page.screenshot({ path: file });
  log(`screenshot ${file}`);
}

async function chord(page, ...keys) {
  for (const k of keys) await page.keyboard.down(k);
  for (const k of [...keys].reverse()) await page.keyboard.up(k);
}

// The editor lines (1-based) that carry an error squiggle, read from Monaco's DOM: each
// decoration row in .view-overlays has the same `top` as its line number in .margin-view-overlays.
function squiggleLines(page) {
  return page.evaluate(() => {
    const editor = document.querySelector(".editor-instance .monaco-editor") || document.querySelector(".monaco-editor");
    if (!editor) return [];
    const tops = new Map();
    for (const n of editor.querySelectorAll(".margin-view-overlays .line-numbers")) {
      const row = n.parentElement;
      tops.set(row.style.top, parseInt(n.textContent.trim(), 10));
    }
    const lines = new Set();
    for (const s of editor.querySelectorAll(".view-overlays .squiggly-error")) {
      const line = tops.get(s.parentElement.style.top);
      if (line) lines.add(line);
    }
    return [...lines].sort((a, b) => a - b);
  });
}

function statusBar(page) {
  return page.evaluate(() => {
    const items = [...document.querySelectorAll(".statusbar-item")];
    const text = (e) => (e.getAttribute("aria-label") || e.textContent || "").trim();
    const problems = items.find((e) => e.id === "status.problems" || /Errors?:/.test(text(e)));
    const ours = items.find((e) => /cutespin:/.test(e.textContent || ""));
    return { problems: problems ? text(problems) : "", cutespin: ours ? (ours.textContent || "").trim() : "" };
  });
}

// A webview's frames come and go while it renders; a frame detached between page.frames() and
// evaluate() throws synchronously in puppeteer, so both failure paths read as "no text yet".
async function frameText(frame) {
  try {
    return await frame.evaluate(() => (document.body ? document.body.innerText : ""));
  } catch {
    return "";
  }
}

async function waitUntil(what, fn, timeout = WAIT) {
  const t = Date.now();
  let last;
  while (Date.now() - t < timeout) {
    last = await fn();
    if (last && last.ok) {
      log(`ok: ${what}`);
      return last;
    }
    await sleep(200);
  }
  throw new Error(`timed out after ${timeout / 1000} s waiting for ${what}; last seen: ${JSON.stringify(last).slice(0, 1500)}`);
}

async function goToLine(page, line, column) {
  await chord(page, "Control", "g");
  await page.waitForSelector(".quick-input-widget input", { visible: true, timeout: WAIT });
  await page.keyboard.type(`${line}:${column}`);
  await sleep(150);
  await page.keyboard.press("Enter");
  await page.waitForSelector(".quick-input-widget", { hidden: true, timeout: WAIT });
  await waitUntil(`cursor at line ${line}`, async () => {
    const s = await page.evaluate(() =>
      [...document.querySelectorAll(".statusbar-item")].map((e) => e.textContent || "").find((t) => /Ln \d+, Col \d+/.test(t)),
    );
    return { ok: !!s && s.includes(`Ln ${line},`), s };
  });
}

async function runCommand(page, label) {
  await waitUntil("the command palette", async () => {
    await chord(page, "Control", "Shift", "p");
    const ok = await page.waitForSelector(".quick-input-widget input", { visible: true, timeout: 3000 }).then(() => true, () => false);
    return { ok };
  });
  await page.keyboard.type(label);
  await waitUntil(`"${label}" in the palette`, async () => {
    const rows = await page.$$eval(".quick-input-list .monaco-list-row", (rs) => rs.map((r) => r.textContent || ""));
    return { ok: rows.length > 0 && rows[0].includes(label), rows: rows.slice(0, 3) };
  });
  await page.keyboard.press("Enter");
}

function activeTabs(page) {
  return page.$$eval(".tabs-container .tab.active", (ts) => ts.map((t) => t.textContent || ""));
}

async function main() {
  fs.mkdirSync(cfg.artifacts, { recursive: true });
  const browser = await puppeteer.launch({
    executablePath: cfg.chromium,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--window-size=1400,900"],
    defaultViewport: { width: 1400, height: 900 },
  });
  const results = {};
  let page;
  try {
    page = await browser.newPage();
    page.on("pageerror", (e) => log(`page error: ${String(e).slice(0, 300)}`));
    await page.goto(cfg.url, { waitUntil: "domcontentloaded", timeout: WAIT });
    await page.waitForSelector(".monaco-workbench", { timeout: WAIT });
    await page.waitForSelector(".explorer-folders-view .monaco-list-row", { timeout: WAIT });
    log("workbench up");

    // Open the file with Quick Open.
    await waitUntil("quick open", async () => {
      await chord(page, "Control", "p");
      const ok = await page.waitForSelector(".quick-input-widget input", { visible: true, timeout: 3000 }).then(() => true, () => false);
      return { ok };
    });
    await page.keyboard.type(cfg.file);
    await waitUntil("the file in the quick open list", async () => {
      const rows = await page.$$eval(".quick-input-list .monaco-list-row", (rs) => rs.map((r) => r.textContent));
      return { ok: rows.some((t) => t.includes(cfg.file)), rows };
    });
    await page.keyboard.press("Enter");
    await waitUntil("the editor tab", async () => {
      const tab = await page.$$eval(".tabs-container .tab.active", (ts) => ts.map((t) => t.textContent));
      return { ok: tab.some((t) => t.includes(cfg.file)), tab };
    });

    // Edit (a comment at the end: no line moves) and save: the check runs on save.
    await page.waitForSelector(".editor-instance .view-lines .view-line", { visible: true, timeout: WAIT });
    await page.click(".editor-instance .view-lines");
    await chord(page, "Control", "End");
    await page.keyboard.type("\n# saved by the editor test\n");
    await chord(page, "Control", "s");
    await waitUntil("the save", async () => {
      const dirty = await page.$$eval(".tabs-container .tab.active.dirty", (ts) => ts.length);
      return { ok: dirty === 0 };
    });
    await goToLine(page, cfg.line, cfg.column);

    // 1. The squiggle on the expected line, and the status item.
    const squiggle = await waitUntil(`a squiggle on line ${cfg.line}`, async () => {
      const lines = await squiggleLines(page);
      const status = await statusBar(page);
      return { ok: lines.includes(cfg.line) && /finding/.test(status.cutespin), lines, status };
    });
    results.squiggleLines = squiggle.lines;
    results.statusBefore = squiggle.status;

    // 2. The Problems panel: one row, on the expected line.
    await chord(page, "Control", "Shift", "m");
    const problems = await waitUntil("the Problems panel row", async () => {
      const rows = await page.$$eval(".markers-panel .monaco-list-row", (rs) =>
        rs.map((r) => r.getAttribute("aria-label") || r.textContent || ""),
      );
      const status = await statusBar(page);
      // the finding's row: "Error: <message> at line 70 and character 13. ... generated by cutespin"
      const hit = rows.filter((r) => r.startsWith("Error:") && r.includes(`at line ${cfg.line} and character ${cfg.column}`) && r.includes("cutespin"));
      return { ok: hit.length === 1 && /Errors?: ?1\b/i.test(status.problems), rows: hit.length ? hit : rows.slice(0, 3), status };
    });
    results.problemRows = problems.rows;
    results.problemsStatus = problems.status.problems;
    await goToLine(page, cfg.line, cfg.column); // focus back in the editor
    await shot(page, "squiggle");

    // 3. Hover over the squiggle: the interleaving.
    const box = await waitUntil("the squiggle's box", async () => {
      const b = await page.evaluate((line) => {
        const editor = document.querySelector(".editor-instance .monaco-editor");
        const tops = new Map();
        for (const n of editor.querySelectorAll(".margin-view-overlays .line-numbers")) {
          tops.set(n.parentElement.style.top, parseInt(n.textContent.trim(), 10));
        }
        for (const s of editor.querySelectorAll(".view-overlays .squiggly-error")) {
          if (tops.get(s.parentElement.style.top) === line) {
            const r = s.getBoundingClientRect();
            return { x: r.x, y: r.y, width: r.width, height: r.height };
          }
        }
        return null;
      }, cfg.line);
      return { ok: !!b && b.width > 0, ...b };
    });
    const hover = await waitUntil("the hover with the server's interleaving", async () => {
      await page.mouse.move(box.x + Math.min(20, box.width / 2), box.y + box.height / 2);
      await sleep(300);
      const text = await page.evaluate(() =>
        [...document.querySelectorAll(".monaco-hover")]
          .filter((h) => h.offsetParent !== null)
          .map((h) => h.innerText)
          .join("\n"),
      );
      // the diagnostic's message, then the server's Markdown: the trimmed interleaving table and
      // the link to the full trace
      const ok = text.includes(cfg.code) && text.includes("Interleaving found by SPIN") &&
        /barrier after/.test(text) && /Show the full interleaving/.test(text);
      return { ok, text };
    }, WAIT);
    results.hover = hover.text;
    // Shot at once, while the mouse still holds the hover open (scrolling it may close it).
    await shot(page, "hover");
    // Scroll the hover to the server's part (the diagnostic's related locations come first).
    await waitUntil("the interleaving table in view", async () => {
      const r = await page.evaluate(() => {
        const h = [...document.querySelectorAll(".monaco-hover")].find((x) => x.offsetParent !== null);
        if (!h) return null;
        const hb = h.getBoundingClientRect();
        const p = [...h.querySelectorAll("p")].find((e) => e.innerText.includes("Interleaving found by SPIN"));
        const pb = p ? p.getBoundingClientRect() : null;
        return { hx: hb.x + hb.width / 2, hy: hb.y + hb.height / 2, top: hb.top, ptop: pb && pb.top };
      });
      if (!r || r.ptop === null) return { ok: false, r };
      if (r.ptop >= r.top && r.ptop <= r.top + 40) return { ok: true };
      await page.mouse.move(r.hx, r.hy);
      await page.mouse.wheel({ deltaY: Math.max(-400, Math.min(400, r.ptop - r.top - 10)) });
      await sleep(150);
      return { ok: false, r };
    }, 20000).then(() => shot(page, "hover-table"))
      .catch((e) => log(`(the hover could not be scrolled for the screenshot: ${e.message.slice(0, 200)})`));
    await page.mouse.move(5, 450);
    await page.keyboard.press("Escape");

    // 4. The extension's commands, from the palette: the Promela model and the trace.
    await goToLine(page, cfg.line, cfg.column);
    await runCommand(page, "cutespin: Show the Promela model");
    const pml = await waitUntil("the Promela model document", async () => {
      const tabs = await activeTabs(page);
      const text = await page.evaluate(() =>
        [...document.querySelectorAll(".editor-instance .view-lines")].map((v) => v.innerText).join("\n"),
      );
      return { ok: tabs.some((t) => t.includes(".pml")) && /proctype|active/.test(text), tabs };
    });
    results.promelaTabs = pml.tabs;
    await shot(page, "promela");
    await chord(page, "Control", "w");
    await goToLine(page, cfg.line, cfg.column);
    await runCommand(page, "cutespin: Show the counterexample trace");
    const trace = await waitUntil("the trace's Markdown preview", async () => {
      const tabs = await activeTabs(page);
      return { ok: tabs.some((t) => /Preview/.test(t)), tabs };
    });
    results.traceTabs = trace.tabs;
    // The preview is a webview (nested iframes): wait for the rendered table in one of its frames.
    const rendered = await waitUntil("the rendered trace table", async () => {
      for (const f of page.frames()) {
        const t = await frameText(f);
        if (t.includes(cfgCode()) && /barrier after/.test(t)) return { ok: true, text: t };
      }
      return { ok: false, frames: page.frames().length };
    }, 30000);
    results.trace = rendered.text;
    await shot(page, "trace");
    await chord(page, "Control", "w");
    await waitUntil("the kernel's editor active again", async () => {
      const tabs = await activeTabs(page);
      return { ok: tabs.some((t) => t.includes(cfg.file)) && !tabs.some((t) => /Preview/.test(t)), tabs };
    });

    // 5. The quick fix: Ctrl+. on the finding's line, pick the checker's fix.
    await goToLine(page, cfg.line, cfg.column);
    const menu = await waitUntil("the quick fix menu", async () => {
      const open = await page.$(".action-widget .monaco-list-row");
      if (!open) {
        await chord(page, "Control", ".");
        await sleep(500);
      }
      const items = await page.$$eval(".action-widget .monaco-list-row", (rs) => rs.map((r) => r.textContent || ""));
      return { ok: items.some((t) => t.includes(cfg.fixTitle)), items };
    });
    results.quickFixes = menu.items;
    await shot(page, "quickfix");
    const rows = await page.$$(".action-widget .monaco-list-row");
    for (const r of rows) {
      const t = await r.evaluate((e) => e.textContent || "");
      if (t.includes(cfg.fixTitle)) {
        await r.click();
        break;
      }
    }
    await waitUntil("the fix in the editor", async () => {
      const text = await page.evaluate(() => document.querySelector(".editor-instance .view-lines").innerText);
      return { ok: text.replace(/\u00a0/g, " ").includes(cfg.fixCheck) };
    });

    // 6. Save: the re-check clears the squiggle and the Problems count.
    await chord(page, "Control", "s");
    const after = await waitUntil("no squiggle and no problem after the re-check", async () => {
      const lines = await squiggleLines(page);
      const status = await statusBar(page);
      const dirty = await page.$$eval(".tabs-container .tab.active.dirty", (ts) => ts.length);
      return {
        ok: dirty === 0 && lines.length === 0 && /verified/.test(status.cutespin) && /Errors?: ?0\b|No Problems/i.test(status.problems),
        lines,
        status,
      };
    });
    results.statusAfter = after.status;
    await goToLine(page, cfg.fixLine, 1); // the fixed line in view
    await shot(page, "fixed");
    results.ok = true;
  } catch (e) {
    results.ok = false;
    results.error = String(e && e.stack ? e.stack : e);
    if (page) await shot(page, "failure").catch(() => undefined);
  } finally {
    await browser.close().catch(() => undefined);
  }
  fs.writeFileSync(path.join(cfg.artifacts, "vscode-result.json"), JSON.stringify(results, null, 2));
  console.log(`RESULT ${JSON.stringify(results)}`);
  process.exit(results.ok ? 0 : 1);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
