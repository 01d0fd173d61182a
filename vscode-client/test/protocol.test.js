// Drives `cutespin serve` through vscode-languageserver-protocol, the JSON-RPC stack
// vscode-languageclient is built on, the way the extension does: the same launch
// (launchFor: `<python> -m cutespin serve`, stdio, no transport flag), the same answer to
// workspace/configuration (serverSettings of a full `cutespin` section), then open a buggy
// sample, save it, and check diagnostics, status notifications, hover, code action and the
// three server commands.
const test = require("node:test");
const assert = require("node:assert/strict");
const cp = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { pathToFileURL } = require("node:url");
const {
  createProtocolConnection,
  StreamMessageReader,
  StreamMessageWriter,
} = require("vscode-languageserver-protocol/node");
const { launchFor, serverSettings, statusView } = require("../out/config.js");
const pkg = require("../package.json");

const REPO = path.resolve(__dirname, "..", "..");
const SAMPLE = path.join(REPO, "samples", "named_barrier_mismatch.py");
const EXPECT_LINE = 70; // 1-based, from the sample's `# cutespin-expect:` line (lines=70)

// What VS Code returns for the `cutespin` section with defaults: every contributed key.
function defaultSection() {
  const out = {};
  for (const [key, spec] of Object.entries(pkg.contributes.configuration.properties)) {
    const parts = key.replace(/^cutespin\./, "").split(".");
    let o = out;
    while (parts.length > 1) {
      const p = parts.shift();
      o = o[p] = o[p] || {};
    }
    o[parts[0]] = spec.default;
  }
  return out;
}

function waitFor(pred, ms, what) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const tick = () => {
      const v = pred();
      if (v) return resolve(v);
      if (Date.now() - t0 > ms) return reject(new Error(`timed out after ${ms} ms waiting for ${what}`));
      setTimeout(tick, 25);
    };
    tick();
  });
}

test("the server, driven like vscode-languageclient drives it", { timeout: 120000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cutespin-protocol-"));
  const file = path.join(dir, "kernel.py");
  fs.copyFileSync(SAMPLE, file);
  const uri = pathToFileURL(file).href;
  const text = fs.readFileSync(file, "utf8");

  const launch = launchFor({
    interpreter: process.env.CUTESPIN_PYTHON || "python3",
    env: { ...process.env, PYTHONPATH: path.join(REPO, "server") },
  });
  assert.ok(!launch.args.includes("--stdio"));
  const proc = cp.spawn(launch.command, launch.args, { env: launch.env, cwd: dir, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  proc.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((resolve) => proc.on("exit", (code) => resolve(code)));
  const conn = createProtocolConnection(new StreamMessageReader(proc.stdout), new StreamMessageWriter(proc.stdin));

  const diagnostics = [];
  const statuses = [];
  const shown = [];
  const configRequests = [];
  conn.onNotification("textDocument/publishDiagnostics", (p) => p.uri === uri && diagnostics.push(p));
  conn.onNotification("cutespin/status", (p) => statuses.push(p));
  conn.onNotification("window/showMessage", (p) => shown.push(p));
  conn.onNotification("window/logMessage", () => {});
  conn.onNotification("$/progress", () => {});
  conn.onRequest("workspace/configuration", (params) => {
    configRequests.push(params);
    // exactly the extension's middleware: the section, filtered by serverSettings
    return params.items.map((item) => (item.section === "cutespin" ? serverSettings(defaultSection()) : null));
  });
  conn.onRequest("client/registerCapability", () => null);
  conn.onRequest("window/workDoneProgress/create", () => null);
  conn.onRequest("workspace/codeLens/refresh", () => null);
  conn.onRequest("workspace/inlayHint/refresh", () => null);
  conn.listen();

  t.after(async () => {
    proc.kill("SIGKILL");
    fs.rmSync(dir, { recursive: true, force: true });
  });

  try {
    const init = await conn.sendRequest("initialize", {
      processId: process.pid,
      rootUri: pathToFileURL(dir).href,
      workspaceFolders: [{ uri: pathToFileURL(dir).href, name: "ws" }],
      initializationOptions: serverSettings(defaultSection()),
      capabilities: {
        workspace: {
          configuration: true,
          didChangeConfiguration: { dynamicRegistration: true },
          didChangeWatchedFiles: { dynamicRegistration: true },
          executeCommand: { dynamicRegistration: true },
          codeLens: { refreshSupport: true },
        },
        window: { workDoneProgress: true },
        textDocument: {
          synchronization: { didSave: true, dynamicRegistration: true },
          publishDiagnostics: { relatedInformation: true, versionSupport: true, codeDescriptionSupport: true, dataSupport: true },
          hover: { contentFormat: ["markdown", "plaintext"] },
          codeAction: {
            isPreferredSupport: true,
            dataSupport: true,
            codeActionLiteralSupport: { codeActionKind: { valueSet: ["quickfix", "source", "source.fixAll"] } },
          },
        },
      },
    });
    const cmds = init.capabilities.executeCommandProvider.commands;
    for (const c of ["cutespin.showPromela", "cutespin.showTrace", "cutespin.recheck"]) {
      assert.ok(cmds.includes(c), `server registers ${c}`);
      assert.ok(pkg.contributes.commands.some((x) => x.command === c), `extension contributes ${c}`);
    }
    conn.sendNotification("initialized", {});
    conn.sendNotification("textDocument/didOpen", { textDocument: { uri, languageId: "python", version: 1, text } });
    conn.sendNotification("textDocument/didSave", { textDocument: { uri } });

    const done = await waitFor(
      () => statuses.find((s) => s.uri === uri && s.state === "done" && s.findings > 0),
      60000,
      "a done status with findings",
    );
    assert.equal(statusView(done).text, "$(error) cutespin: 1 finding");
    assert.ok(statuses.some((s) => s.state === "checking"), "a checking status came first");
    assert.ok(configRequests.length > 0, "the server asked for its configuration");

    // the fixes are verified after the first publish; wait for a diagnostic that offers one
    const withFix = await waitFor(() => {
      const last = diagnostics[diagnostics.length - 1];
      const d = last && last.diagnostics.find((x) => x.data && x.data.fixes && x.data.fixes.length && !x.data.fixesPending);
      return d;
    }, 60000, "a diagnostic with verified fixes");
    assert.equal(withFix.source, "cutespin");
    assert.equal(withFix.code, "CS101");
    assert.equal(withFix.range.start.line, EXPECT_LINE - 1);
    assert.ok(withFix.relatedInformation.length > 3, "the interleaving rides along");

    const hover = await conn.sendRequest("textDocument/hover", {
      textDocument: { uri },
      position: { line: EXPECT_LINE - 1, character: withFix.range.start.character },
    });
    assert.equal(hover.contents.kind, "markdown");
    assert.match(hover.contents.value, /CS101/);
    assert.match(hover.contents.value, /step/i);
    assert.match(hover.contents.value, /command:cutespin\.showTrace/);

    const actions = await conn.sendRequest("textDocument/codeAction", {
      textDocument: { uri },
      range: withFix.range,
      context: { diagnostics: [withFix], only: ["quickfix"] },
    });
    assert.ok(actions && actions.length >= 1, "a quick fix");
    const fix = actions.find((a) => a.isPreferred) || actions[0];
    assert.equal(fix.kind, "quickfix");
    const edits = fix.edit.documentChanges ? fix.edit.documentChanges[0].edits : fix.edit.changes[uri];
    assert.ok(edits.length >= 1);

    const trace = await conn.sendRequest("workspace/executeCommand", { command: "cutespin.showTrace", arguments: [uri, withFix.data.id] });
    assert.equal(trace.code, "CS101");
    assert.ok(trace.steps.length > 3);
    assert.match(trace.markdown, /\|/);
    const promela = await conn.sendRequest("workspace/executeCommand", { command: "cutespin.showPromela", arguments: [uri] });
    assert.match(promela.uri, /^cutespin-promela:/);
    assert.match(promela.text, /proctype|active/);

    // apply the fix the way VS Code does (didChange + save), then the re-check clears the finding
    const lines = text.split("\n");
    const applied = applyEdits(lines, edits);
    conn.sendNotification("textDocument/didChange", {
      textDocument: { uri, version: 2 },
      contentChanges: [{ text: applied }],
    });
    fs.writeFileSync(file, applied);
    const before = statuses.length;
    conn.sendNotification("textDocument/didSave", { textDocument: { uri } });
    const after = await waitFor(
      () => statuses.slice(before).find((s) => s.uri === uri && s.state === "done" && s.version === 2),
      60000,
      "the re-check after the fix",
    );
    assert.equal(after.findings, 0);
    assert.equal(statusView(after).text, "$(check) cutespin: verified");
    const last = diagnostics[diagnostics.length - 1];
    assert.equal(last.diagnostics.filter((d) => d.code === "CS101").length, 0);

    const re = await conn.sendRequest("workspace/executeCommand", { command: "cutespin.recheck", arguments: [uri] });
    assert.equal(re.cancelled, false);
    assert.equal(re.results[0].verdict, "verified");

    assert.deepEqual(shown, [], "no pop-ups (e.g. no 'unknown option' warning for client-only settings)");
    await conn.sendRequest("shutdown");
    conn.sendNotification("exit");
    const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("timeout"), 10000).unref())]);
    assert.equal(code, 0, `server exit code (stderr: ${stderr.slice(-2000)})`);
  } catch (e) {
    e.message += `\n--- server stderr ---\n${stderr.slice(-4000)}`;
    throw e;
  } finally {
    conn.dispose();
  }
});

function applyEdits(lines, edits) {
  // edits in reverse document order, each {range, newText}
  const text = lines.join("\n");
  const offsets = [0];
  for (const l of lines) offsets.push(offsets[offsets.length - 1] + l.length + 1);
  const at = (p) => offsets[p.line] + p.character;
  const sorted = [...edits].sort((a, b) => at(b.range.start) - at(a.range.start));
  let out = text;
  for (const e of sorted) out = out.slice(0, at(e.range.start)) + e.newText + out.slice(at(e.range.end));
  return out;
}
