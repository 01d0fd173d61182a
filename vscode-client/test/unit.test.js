// Unit tests of the extension's logic (src/config.ts, built to out/config.js by `npm run build:test`).
const test = require("node:test");
const assert = require("node:assert/strict");
const { execFileSync } = require("node:child_process");
const path = require("node:path");
const pkg = require("../package.json");
const {
  SERVER_KEYS,
  CLIENT_KEYS,
  serverSettings,
  launchFor,
  statusView,
  StatusBook,
  commandArgs,
} = require("../out/config.js");

const PYTHON = process.env.CUTESPIN_PYTHON || "python3";
const REPO = path.resolve(__dirname, "..", "..");

test("serverSettings keeps the server's keys and drops unset values and client-only keys", () => {
  const section = {
    interpreter: "/usr/bin/python3",
    serverSource: "auto",
    serverArgs: ["-v"],
    trace: { server: "verbose" },
    spin: null,
    compiler: null,
    loopBound: 7,
    depth: null,
    timeout: 2.5,
    memoryMb: null,
    strict: false,
    verifyFixes: null,
    trigger: "onType",
    debounceMs: 300,
    severity: { CS902: "information" },
    extraPaths: [],
  };
  assert.deepEqual(serverSettings(section), {
    loopBound: 7,
    timeout: 2.5,
    strict: false,
    trigger: "onType",
    debounceMs: 300,
    severity: { CS902: "information" },
  });
  assert.deepEqual(serverSettings({ severity: {}, extraPaths: ["src"] }), { extraPaths: ["src"] });
  assert.deepEqual(serverSettings(null), {});
  assert.deepEqual(serverSettings([1, 2]), {});
});

test("serverSettings copies objects (VS Code's configuration objects are frozen proxies)", () => {
  const sev = Object.freeze({ CS901: "off" });
  const out = serverSettings({ severity: sev });
  assert.notEqual(out.severity, sev);
  assert.deepEqual(out.severity, { CS901: "off" });
});

test("every server option has a contributed setting, and every contributed setting is known", () => {
  const props = Object.keys(pkg.contributes.configuration.properties).map((k) => k.replace(/^cutespin\./, ""));
  const topLevel = new Set(props.map((k) => k.split(".")[0]));
  for (const key of SERVER_KEYS) {
    assert.ok(topLevel.has(key), `cutespin.${key} is not contributed`);
  }
  for (const key of topLevel) {
    assert.ok(SERVER_KEYS.includes(key) || CLIENT_KEYS.includes(key), `cutespin.${key} is neither a server nor a client key`);
  }
  assert.ok(props.includes("trace.server"), "cutespin.trace.server drives the LSP trace");
});

test("SERVER_KEYS are exactly the server's options (server/cutespin/lsp/settings.py)", () => {
  const out = execFileSync(
    PYTHON,
    ["-c", "import json; from cutespin.lsp.settings import option_names; print(json.dumps(option_names()))"],
    { env: { ...process.env, PYTHONPATH: path.join(REPO, "server") }, encoding: "utf8" },
  );
  const camel = JSON.parse(out).map((n) => n.replace(/_([a-z])/g, (_, c) => c.toUpperCase()));
  assert.deepEqual([...SERVER_KEYS].sort(), camel.sort());
});

test("settings whose default the server derives default to null in package.json", () => {
  const props = pkg.contributes.configuration.properties;
  for (const key of ["spin", "compiler", "loopBound", "depth", "timeout", "memoryMb", "strict", "verifyFixes"]) {
    assert.equal(props[`cutespin.${key}`].default, null, `cutespin.${key}`);
  }
  assert.equal(props["cutespin.trigger"].default, "onSave");
  assert.deepEqual(props["cutespin.trigger"].enum, ["onSave", "onType"]);
  assert.deepEqual(props["cutespin.severity"].additionalProperties.enum, ["error", "warning", "information", "hint", "off"]);
});

test("launchFor: interpreter precedence and no transport flag", () => {
  const a = launchFor({ interpreter: " /opt/py/bin/python ", pythonExtensionInterpreter: "/x/python", env: {} });
  assert.equal(a.command, "/opt/py/bin/python");
  assert.equal(a.interpreterFrom, "setting");
  assert.deepEqual(a.args, ["-m", "cutespin", "serve"]);
  assert.ok(!a.args.includes("--stdio"));
  assert.equal(a.source, "environment");
  assert.equal(a.env.PYTHONPATH, undefined);

  const b = launchFor({ interpreter: "", pythonExtensionInterpreter: "/x/python", serverArgs: ["-v"] });
  assert.equal(b.command, "/x/python");
  assert.equal(b.interpreterFrom, "python extension");
  assert.deepEqual(b.args, ["-m", "cutespin", "serve", "-v"]);

  const c = launchFor({});
  assert.equal(c.command, "python3");
  assert.equal(c.interpreterFrom, "PATH");
  assert.equal(c.env.PYTHONUNBUFFERED, "1");
});

test("launchFor: bundled server sources go first on PYTHONPATH", () => {
  const auto = launchFor({ bundledDir: "/ext/bundled/", env: { PYTHONPATH: "/mine", HOME: "/root" } });
  assert.equal(auto.source, "bundled");
  assert.equal(auto.env.PYTHONPATH, "/ext/bundled/libs:/ext/bundled:/mine");
  assert.equal(auto.env.HOME, "/root");
  const env = launchFor({ bundledDir: "/ext/bundled", serverSource: "environment", env: {} });
  assert.equal(env.source, "environment");
  assert.equal(env.env.PYTHONPATH, undefined);
  assert.throws(() => launchFor({ serverSource: "bundled" }), /carries no server sources/);
  const win = launchFor({ bundledDir: "C:\\ext\\bundled", serverSource: "bundled", pathSeparator: ";", env: {} });
  assert.equal(win.env.PYTHONPATH, "C:\\ext\\bundled/libs;C:\\ext\\bundled");
});

const base = { uri: "file:///k.py", version: 3, kernels: 1, findings: 0, inconclusive: 0, results: [] };

test("statusView: running / verified / N findings / inconclusive / error / hidden", () => {
  assert.equal(statusView(undefined), undefined);
  assert.equal(statusView({ ...base, state: "idle" }), undefined);
  assert.equal(statusView({ ...base, state: "closed" }), undefined);
  assert.equal(statusView({ ...base, state: "checking" }).text, "$(sync~spin) cutespin: checking");
  assert.equal(statusView({ ...base, state: "checking" }).level, "busy");

  const ok = statusView({ ...base, state: "done", seconds: 0.42, results: [{ kernel: "K.kernel", verdict: "verified" }] });
  assert.equal(ok.text, "$(check) cutespin: verified");
  assert.equal(ok.level, "ok");
  assert.match(ok.tooltip, /K\.kernel: verified/);
  assert.match(ok.tooltip, /checked in 0\.42 s/);
  assert.equal(statusView({ ...base, kernels: 2, state: "done" }).text, "$(check) cutespin: verified (2 kernels)");
  assert.match(statusView({ ...base, state: "done", cached: true, seconds: 0 }).tooltip, /from cache/);

  const one = statusView({ ...base, state: "done", findings: 1, results: [{ kernel: "K.kernel", verdict: "counterexample", findings: ["CS101"] }] });
  assert.equal(one.text, "$(error) cutespin: 1 finding");
  assert.equal(one.level, "error");
  assert.match(one.tooltip, /K\.kernel: counterexample \(CS101\)/);
  assert.equal(statusView({ ...base, state: "done", findings: 3 }).text, "$(error) cutespin: 3 findings");
  assert.equal(
    statusView({ ...base, state: "checked", findings: 2, fixesPending: 1 }).text,
    "$(error) cutespin: 2 findings · verifying fixes",
  );

  assert.equal(statusView({ ...base, state: "done", inconclusive: 1 }).text, "$(warning) cutespin: inconclusive");
  assert.equal(
    statusView({ ...base, state: "done", kernels: 3, inconclusive: 1 }).text,
    "$(warning) cutespin: inconclusive (1 of 3 kernels)",
  );
  const err = statusView({ ...base, state: "error", kind: "tool", message: "spin not found" });
  assert.equal(err.text, "$(alert) cutespin: error");
  assert.match(err.tooltip, /tool error: spin not found/);
  assert.equal(statusView({ ...base, state: "cancelled" }).text, "$(circle-slash) cutespin: cancelled");
});

test("StatusBook ignores late notifications for older versions and forgets closed documents", () => {
  const book = new StatusBook();
  assert.ok(book.update({ ...base, version: 5, state: "checking" }));
  assert.ok(!book.update({ ...base, version: 4, state: "done" }));
  assert.equal(book.get(base.uri).state, "checking");
  assert.ok(book.update({ ...base, version: 5, state: "done" }));
  assert.equal(book.get(base.uri).state, "done");
  assert.ok(book.update({ uri: base.uri, state: "closed" }));
  assert.equal(book.get(base.uri), undefined);
});

test("commandArgs fills the palette's empty arguments from the active editor", () => {
  const active = { uri: "file:///k.py", line: 9, findings: [{ id: "K.kernel#0", line: 3 }, { id: "K.kernel#1", line: 9 }] };
  assert.deepEqual(commandArgs("cutespin.showTrace", ["u", "id"], active), ["u", "id"]);
  assert.deepEqual(commandArgs("cutespin.showTrace", [], active), ["file:///k.py", "K.kernel#1"]);
  assert.deepEqual(commandArgs("cutespin.showTrace", [], { ...active, line: 0 }), ["file:///k.py", "K.kernel#0"]);
  assert.equal(commandArgs("cutespin.showTrace", [], { ...active, findings: [] }), undefined);
  assert.deepEqual(commandArgs("cutespin.showPromela", [], active), ["file:///k.py"]);
  assert.deepEqual(commandArgs("cutespin.recheck", [], active), ["file:///k.py"]);
  assert.equal(commandArgs("cutespin.recheck", [], undefined), undefined);
});

test("package.json: activation on Python files, the commands, one output channel id", () => {
  assert.deepEqual(pkg.activationEvents, ["onLanguage:python"]);
  const cmds = pkg.contributes.commands.map((c) => c.command).sort();
  for (const c of ["cutespin.restart", "cutespin.showPromela", "cutespin.showTrace", "cutespin.recheck"]) {
    assert.ok(cmds.includes(c), c);
  }
  assert.equal(pkg.main, "./dist/extension.js");
});
